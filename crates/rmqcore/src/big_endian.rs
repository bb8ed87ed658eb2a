//! Big-endian integer access for on-disk structures.
//!
//! Every integer in RocketMQ's files is big-endian (Java `ByteBuffer`'s default). All reads
//! and writes of file fields go through these helpers so that no platform-width or
//! native-endian integer reaches disk. Callers check bounds first; these panic on a short
//! slice, which would be a bug in the caller, never a property of the input.

#[inline]
pub fn read_i16(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([buf[at], buf[at + 1]])
}

#[inline]
pub fn read_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4-byte slice"))
}

#[inline]
pub fn read_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8-byte slice"))
}

#[inline]
pub fn write_i16(buf: &mut [u8], at: usize, value: i16) {
    buf[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

#[inline]
pub fn write_i32(buf: &mut [u8], at: usize, value: i32) {
    buf[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

#[inline]
pub fn write_i64(buf: &mut [u8], at: usize, value: i64) {
    buf[at..at + 8].copy_from_slice(&value.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_are_big_endian() {
        let mut buf = [0u8; 14];
        write_i16(&mut buf, 0, -2);
        write_i32(&mut buf, 2, 0x0102_0304);
        write_i64(&mut buf, 6, -626_843_481);
        assert_eq!(&buf[2..6], &[1, 2, 3, 4]);
        assert_eq!(read_i16(&buf, 0), -2);
        assert_eq!(read_i32(&buf, 2), 0x0102_0304);
        assert_eq!(read_i64(&buf, 6), -626_843_481);
    }
}
