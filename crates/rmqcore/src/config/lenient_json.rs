//! RocketMQ writes its config files with fastjson, which leaves integer map keys unquoted
//! (`{0:123}`, format §4.4). This quotes such keys so a standard JSON parser accepts them.

/// Quote every bare integer used as an object key.
pub fn quote_bare_integer_keys(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut expecting_key = false;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            let width = text[index..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[index..index + width]);
            index += width;
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                expecting_key = false;
            }
            b'{' | b',' => expecting_key = true,
            b'-' | b'0'..=b'9' if expecting_key => {
                let start = index;
                let mut end = index + 1;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
                let mut after = end;
                while after < bytes.len() && bytes[after].is_ascii_whitespace() {
                    after += 1;
                }
                if after < bytes.len() && bytes[after] == b':' {
                    out.push('"');
                    out.push_str(&text[start..end]);
                    out.push('"');
                    index = end;
                    expecting_key = false;
                    continue;
                }
                expecting_key = false;
            }
            b if b.is_ascii_whitespace() => {}
            _ => expecting_key = false,
        }
        // Copy one whole UTF-8 character.
        let width = text[index..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[index..index + width]);
        index += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_fastjson_integer_keys_only() {
        let text = r#"{"offsetTable":{"T@g":{0:12,1 : 3,-1:4}},"s":"{0:1}","n":[1,2]}"#;
        let fixed = quote_bare_integer_keys(text);
        assert_eq!(
            fixed,
            r#"{"offsetTable":{"T@g":{"0":12,"1" : 3,"-1":4}},"s":"{0:1}","n":[1,2]}"#
        );
        let value: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(value["offsetTable"]["T@g"]["1"], 3);
    }
}
