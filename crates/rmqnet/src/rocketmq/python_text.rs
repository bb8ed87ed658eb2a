//! Texts as the v2 send path has always worded them for clients: blankness as Python's
//! `str.strip()` decides it, and a client's text quoted as Python's `repr()` quotes it
//! (`tag 'a|b' is blank ...`), so the refusals read the same as they did when the
//! Python broker answered them.

/// Python's `str.isspace()` for one character: Unicode's White_Space, and the four
/// information separators (U+001C..U+001F) Python counts as well.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `not text.strip()` in Python.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(python_space)
}

/// A character below U+0020 (the engine's message rules refuse them too).
pub fn has_control(text: &str) -> bool {
    text.chars().any(|c| c < '\u{20}')
}

/// Python's `repr(text)`: single quotes unless the text holds one and no double quote;
/// backslash escapes for the quote, the backslash, tab, newline, carriage return, and
/// every character Python does not print.
pub fn repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if u32::from(c) <= 0xff => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if u32::from(c) <= 0xffff => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character: not a control, format, surrogate,
/// private-use, line or paragraph separator, nor a space other than U+0020. Rust's
/// standard library has no general categories, so the format characters are the ones
/// Unicode assigns; an unassigned code point (which Python escapes) is printed as is.
fn printable(c: char) -> bool {
    let code = u32::from(c);
    let space = c != ' ' && c.is_whitespace();
    let control = c.is_control();
    let format = matches!(
        code,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private = matches!(code, 0xe000..=0xf8ff | 0xf0000..=0x10ffff);
    let noncharacter = (0xfdd0..=0xfdef).contains(&code) || code & 0xfffe == 0xfffe;
    !(space || control || format || private || noncharacter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blankness_is_pythons() {
        for blank in ["", " ", "\t\n", "\u{3000}", "\u{1f}", "\u{85}\u{2028}"] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["a", " x ", "标签", "\u{200b}"] {
            assert!(!is_blank(text), "{text:?}");
        }
    }

    #[test]
    fn repr_quotes_as_python_does() {
        // Each right-hand side is what Python 3.11 prints for repr() of the left.
        let cases = [
            ("a|b", "'a|b'"),
            ("\t", "'\\t'"),
            ("it's", "\"it's\""),
            ("'\"", "'\\'\"'"),
            ("a\\b", "'a\\\\b'"),
            ("\u{1}\u{7f}", "'\\x01\\x7f'"),
            ("\u{a0}\u{ad}é", "'\\xa0\\xadé'"),
            ("\u{3000}标签", "'\\u3000标签'"),
            ("\u{200b}\u{2028}", "'\\u200b\\u2028'"),
            ("\u{e000}\u{10ffff}", "'\\ue000\\U0010ffff'"),
            ("😀", "'😀'"),
        ];
        for (text, expected) in cases {
            assert_eq!(repr(text), expected, "{text:?}");
        }
    }
}
