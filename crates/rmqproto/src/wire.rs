//! The protobuf wire format's primitives (varints, tags, length-delimited fields), for
//! the broker messages the binding encodes and decodes itself without building them as
//! structs first (`pull_encoding.rs`, `send_batch.rs`). Field numbers come from
//! [`crate::fields`].

pub const WIRE_VARINT: u32 = 0;
pub const WIRE_FIXED64: u32 = 1;
pub const WIRE_LENGTH_DELIMITED: u32 = 2;
pub const WIRE_FIXED32: u32 = 5;

pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub fn varint_length(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

pub fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(out, u64::from((field << 3) | wire_type));
}

/// The bytes a length-delimited field of `length` bytes takes, tag included.
pub fn field_length(field: u32, length: usize) -> usize {
    varint_length(u64::from(field << 3)) + varint_length(length as u64) + length
}

/// int32 and int64 fields: negative values take ten bytes, as protobuf encodes them.
pub fn put_int_field(out: &mut Vec<u8>, field: u32, value: i64) {
    if value != 0 {
        put_tag(out, field, WIRE_VARINT);
        put_varint(out, value as u64);
    }
}

pub fn put_bytes_field(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    if !value.is_empty() {
        put_tag(out, field, WIRE_LENGTH_DELIMITED);
        put_varint(out, value.len() as u64);
        out.extend_from_slice(value);
    }
}

pub fn put_string_field(out: &mut Vec<u8>, field: u32, value: &str) {
    put_bytes_field(out, field, value.as_bytes());
}

/// Reads one protobuf message's fields in order. Every method returns `None` on bytes
/// that are not valid protobuf, so callers can fall back to the library's own parser for
/// its error message.
pub struct WireReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// One field as read: its number and its value.
pub enum WireValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// Fixed-width values, which no field rmq reads uses: skipped.
    Fixed,
}

impl<'a> WireReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        WireReader { bytes, at: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        // Most varints read are one byte (every field key below 16, most lengths below
        // 128): read those without the loop (4 instructions per field fewer).
        let first = *self.bytes.get(self.at)?;
        if first < 0x80 {
            self.at += 1;
            return Some(u64::from(first));
        }
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            value |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(length)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    /// Every value of a packed run of varints (a repeated integer field's bytes) appended
    /// to `out` as protobuf reads an `int64`; None on malformed bytes.
    pub fn packed_varints(bytes: &'a [u8], out: &mut Vec<i64>) -> Option<()> {
        let mut reader = WireReader::new(bytes);
        // At most one value per byte: one allocation, short-lived (counting the values
        // first cost more than the decoding).
        out.reserve(bytes.len());
        while reader.at < bytes.len() {
            let value = match reader.bytes.get(reader.at..reader.at + 8) {
                Some(word) => reader.short_varint(word.try_into().ok()?),
                None => None,
            };
            let value = match value {
                Some(value) => value,
                None => reader.varint()?,
            };
            out.push(value as i64);
        }
        Some(())
    }

    /// A varint of at most 8 bytes read from the 8 bytes at the reader's position in a
    /// few word operations (byte by byte, a 6-byte timestamp cost about 50 instructions);
    /// None for a longer one, which `varint` reads.
    fn short_varint(&mut self, word: [u8; 8]) -> Option<u64> {
        let word = u64::from_le_bytes(word);
        // The last byte of the varint is the first with its high bit clear.
        let ends = !word & 0x8080_8080_8080_8080;
        if ends == 0 {
            return None;
        }
        let length = ends.trailing_zeros() as usize / 8 + 1;
        let kept = if length == 8 {
            word
        } else {
            word & ((1u64 << (length * 8)) - 1)
        };
        // Drop each byte's high bit and close the gaps: 7-bit groups to 14, 28, then 56.
        let mut value = kept & 0x7F7F_7F7F_7F7F_7F7F;
        value = ((value & 0x7F00_7F00_7F00_7F00) >> 1) | (value & 0x007F_007F_007F_007F);
        value = ((value & 0x3FFF_0000_3FFF_0000) >> 2) | (value & 0x0000_3FFF_0000_3FFF);
        value = ((value & 0x0FFF_FFFF_0000_0000) >> 4) | (value & 0x0000_0000_0FFF_FFFF);
        self.at += length;
        Some(value)
    }

    /// The next field, `Some(None)` at the end, `None` on malformed bytes.
    pub fn next_field(&mut self) -> Option<Option<(u32, WireValue<'a>)>> {
        if self.at == self.bytes.len() {
            return Some(None);
        }
        let key = self.varint()?;
        // Field numbers run from 1 to 2^29 - 1.
        let field = u32::try_from(key >> 3)
            .ok()
            .filter(|field| (1..1 << 29).contains(field))?;
        let value = match (key & 7) as u32 {
            WIRE_VARINT => WireValue::Varint(self.varint()?),
            WIRE_LENGTH_DELIMITED => {
                let length = usize::try_from(self.varint()?).ok()?;
                WireValue::Bytes(self.take(length)?)
            }
            WIRE_FIXED64 => {
                self.take(8)?;
                WireValue::Fixed
            }
            WIRE_FIXED32 => {
                self.take(4)?;
                WireValue::Fixed
            }
            _ => return None,
        };
        Some(Some((field, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_varints_read_every_length_as_one_by_one() {
        let values: Vec<u64> = (0..64)
            .flat_map(|bits| [1u64 << bits, (1u64 << bits) - 1, (1u64 << bits) | 1])
            .chain([u64::MAX, 0, 300, 1_700_000_000_123])
            .collect();
        let mut packed = Vec::new();
        for &value in &values {
            put_varint(&mut packed, value);
        }
        // Every start position, so each value is read both word-wise and near the end.
        for skip in 0..values.len() {
            let mut start = Vec::new();
            for &value in &values[..skip] {
                put_varint(&mut start, value);
            }
            let mut read = Vec::new();
            WireReader::packed_varints(&packed[start.len()..], &mut read).unwrap();
            let expected: Vec<i64> = values[skip..].iter().map(|&v| v as i64).collect();
            assert_eq!(read, expected);
        }
        let mut read = Vec::new();
        assert!(WireReader::packed_varints(&[0x80, 0x80], &mut read).is_none());
        assert!(WireReader::packed_varints(&[0xFF; 11], &mut read).is_none());
    }

    #[test]
    fn varints_match_protobuf() {
        let encode = |value: u64| {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            out
        };
        assert_eq!(encode(0), [0]);
        assert_eq!(encode(1), [1]);
        assert_eq!(encode(300), [0xAC, 0x02]);
        assert_eq!(encode(-1i64 as u64).len(), 10);
        for value in [0, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let bytes = encode(value);
            assert_eq!(varint_length(value), bytes.len());
            let mut framed = Vec::new();
            put_tag(&mut framed, 3, WIRE_VARINT);
            framed.extend_from_slice(&bytes);
            let mut reader = WireReader::new(&framed);
            match reader.next_field() {
                Some(Some((3, WireValue::Varint(read)))) => assert_eq!(read, value),
                _ => panic!("varint {value} did not read back"),
            }
            assert!(matches!(reader.next_field(), Some(None)));
        }
    }

    #[test]
    fn field_sixteen_takes_a_two_byte_tag() {
        let mut out = Vec::new();
        put_int_field(&mut out, 16, 1);
        assert_eq!(out, [0x80, 0x01, 0x01]);
    }

    #[test]
    fn malformed_bytes_read_as_none() {
        // A length past the end, a varint that never ends, wire type 3, field 0.
        for bytes in [
            &[0x0A, 0x05, 1][..],
            &[0x08, 0xFF, 0xFF],
            &[0x0B],
            &[0x00, 0x01],
        ] {
            assert!(WireReader::new(bytes).next_field().is_none(), "{bytes:?}");
        }
    }
}
