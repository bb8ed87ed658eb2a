//! The whole-record CRC property of RocketMQ 5.2+ (format §1.5): the last 20 bytes of a
//! record's properties are `__CRC32#`, 0x01, ten decimal digits least-significant first,
//! 0x02, covering every record byte before that region.

use crate::record::body_crc::{body_crc, crc32, crc32_is_wide, crc32_update, masked_crc};
use crate::record::crc_shift::crc32_combine;
use crate::record::RecordView;

pub const CRC_PROPERTY_NAME: &str = "__CRC32#";
pub const CRC_PROPERTY_LENGTH: usize = CRC_PROPERTY_NAME.len() + 1 + 10 + 1;

const _: () = assert!(CRC_PROPERTY_LENGTH == 20);

/// The digits as RocketMQ writes them: least-significant first, padded with '0'. Two
/// digits a step from a table (five divisions instead of ten): every record written
/// pays for this.
pub fn encode_crc_digits(crc: i32) -> [u8; 10] {
    const PAIRS: [[u8; 2]; 100] = {
        let mut pairs = [[0u8; 2]; 100];
        let mut n = 0;
        while n < 100 {
            // Least-significant first, as in the property.
            pairs[n] = [b'0' + (n % 10) as u8, b'0' + (n / 10) as u8];
            n += 1;
        }
        pairs
    };
    let mut digits = [b'0'; 10];
    let mut value = crc.unsigned_abs();
    for pair in digits.chunks_exact_mut(2) {
        pair.copy_from_slice(&PAIRS[(value % 100) as usize]);
        value /= 100;
    }
    digits
}

pub fn decode_crc_digits(digits: &[u8]) -> Option<i64> {
    digits.iter().rev().try_fold(0i64, |value, digit| {
        digit
            .is_ascii_digit()
            .then(|| value * 10 + i64::from(digit - b'0'))
    })
}

/// The placeholder region a writer appends to the properties; `encode_record` fills in
/// the digits once the record's offsets and store time are known.
pub const CRC_PROPERTY_PLACEHOLDER: &[u8; CRC_PROPERTY_LENGTH] = b"__CRC32#\x010000000000\x02";

/// Fill in the CRC digits of a fully encoded record whose properties end with the CRC
/// region; records without it are left alone.
pub fn fill_crc_property(record: &mut [u8], properties_length: usize, body: Option<KnownBody>) {
    let length = record.len();
    if properties_length < CRC_PROPERTY_LENGTH {
        return;
    }
    let region = length - CRC_PROPERTY_LENGTH;
    if !record[region..].starts_with(CRC_PROPERTY_NAME.as_bytes())
        || record[region + 8] != 0x01
        || record[length - 1] != 0x02
    {
        return;
    }
    let digits = encode_crc_digits(masked_crc(record_crc(&record[..region], body)));
    record[region + 9..length - 1].copy_from_slice(&digits);
}

/// Where a record's body is and its (unmasked) CRC-32, which the writer computed for the
/// header's body CRC.
#[derive(Debug, Clone, Copy)]
pub struct KnownBody {
    pub start: usize,
    pub length: usize,
    pub crc32: u32,
}

/// Bodies shorter than this are hashed again with the rest of the record: below it,
/// shifting past the body costs more than reading it. Shifting costs about 17 ns
/// whatever the length (the head, the factor, the tail); the 512-bit CRC reads a 768 B
/// record body in about that time, crc32fast (on other CPUs) a 256 B one (timing loop,
/// best of 11, x86-64: with the 512-bit CRC full 15 ns / shift 17 ns at 512 B, 18 / 17
/// at 768 B, 22 / 16 at 1 KiB).
fn shift_past_bodies_from() -> usize {
    if crc32_is_wide() {
        768
    } else {
        256
    }
}

/// CRC-32 of `covered`, the record before its CRC region; the body's bytes are read only
/// when its CRC is not known, or the body is short.
fn record_crc(covered: &[u8], body: Option<KnownBody>) -> u32 {
    match body {
        Some(body) if body.length >= shift_past_bodies_from() => {
            let end = body.start + body.length;
            let head = crc32(&covered[..body.start]);
            let through_body = crc32_combine(head, body.crc32, body.length as u64);
            crc32_update(through_body, &covered[end..])
        }
        _ => crc32(covered),
    }
}

/// Whether the record's properties end with a well-formed CRC region.
pub fn has_crc_property(record: &RecordView<'_>) -> bool {
    let properties = record.properties;
    properties.len() >= CRC_PROPERTY_LENGTH && {
        let region = &properties[properties.len() - CRC_PROPERTY_LENGTH..];
        region.starts_with(CRC_PROPERTY_NAME.as_bytes()) && region[8] == 0x01 && region[19] == 0x02
    }
}

/// Whether the record carries the property, and if so whether it matches.
/// `record_bytes` are the record's `total_size` bytes.
pub fn check_crc_property(record: &RecordView<'_>, record_bytes: &[u8]) -> Option<bool> {
    check_record_crc(record.properties, record_bytes)
}

/// `check_crc_property` given the record's properties bytes rather than its view (the
/// decoder checks before it builds one).
pub fn check_record_crc(properties: &[u8], record_bytes: &[u8]) -> Option<bool> {
    if properties.len() < CRC_PROPERTY_LENGTH {
        return None;
    }
    let region = &properties[properties.len() - CRC_PROPERTY_LENGTH..];
    if !region.starts_with(CRC_PROPERTY_NAME.as_bytes()) || region[8] != 0x01 || region[19] != 0x02
    {
        return None;
    }
    let stored = decode_crc_digits(&region[9..19])?;
    let covered = &record_bytes[..record_bytes.len() - CRC_PROPERTY_LENGTH];
    Some(stored == i64::from(body_crc(covered)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_match_format_examples() {
        assert_eq!(&encode_crc_digits(123), b"3210000000");
        assert_eq!(&encode_crc_digits(1_274_296_614), b"4166924721");
        assert_eq!(decode_crc_digits(b"4166924721"), Some(1_274_296_614));
        assert_eq!(decode_crc_digits(b"41669x4721"), None);
        for crc in [0, 7, 10, 99, 100, 1_000_000_007, i32::MAX, -5] {
            let digits = encode_crc_digits(crc);
            assert_eq!(
                decode_crc_digits(&digits),
                Some(i64::from(crc.unsigned_abs()))
            );
        }
    }
}
