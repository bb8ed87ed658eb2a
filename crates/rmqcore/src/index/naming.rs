//! Index file names: creation times as `yyyyMMddHHmmssSSS` in local time, always
//! moving forward so that name order is log order.

use crate::clock::now_millis;
use crate::error::{Error, Result};

use super::INDEX_DIR;

/// `yyyyMMddHHmmssSSS`.
pub(super) const NAME_DIGITS: usize = 17;

/// `millis` as a file name in local time, or `None` if the C library cannot convert it.
pub fn file_name_for(millis: i64) -> Option<String> {
    let seconds = libc::time_t::try_from(millis.div_euclid(1000)).ok()?;
    // SAFETY: `tm` is plain data; localtime_r only writes into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&seconds, &mut tm) }.is_null() {
        return None;
    }
    Some(format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        millis.rem_euclid(1000)
    ))
}

/// The time a file name stands for (local time), if it is one.
pub fn millis_of_file_name(name: &str) -> Option<i64> {
    if name.len() != NAME_DIGITS || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| name[range].parse::<i32>().ok();
    // SAFETY: plain data.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = field(0..4)? - 1900;
    tm.tm_mon = field(4..6)? - 1;
    tm.tm_mday = field(6..8)?;
    tm.tm_hour = field(8..10)?;
    tm.tm_min = field(10..12)?;
    tm.tm_sec = field(12..14)?;
    tm.tm_isdst = -1;
    // SAFETY: valid pointer to an initialised struct.
    let seconds = unsafe { libc::mktime(&mut tm) };
    let millis = field(14..17)?;
    (seconds != -1).then(|| seconds * 1000 + i64::from(millis))
}

/// A name later than `last` (if any) for a file created now.
pub(super) fn next_file_name(last: Option<&str>) -> Result<String> {
    let clock_error = || {
        Error::io(
            INDEX_DIR,
            std::io::Error::other("cannot convert the time to a local index file name"),
        )
    };
    let mut millis = now_millis();
    if let Some(last_millis) = last.and_then(millis_of_file_name) {
        millis = millis.max(last_millis + 1);
    }
    // Around a daylight-saving change local names can repeat: step until later.
    for _ in 0..10_000_000 {
        let name = file_name_for(millis).ok_or_else(clock_error)?;
        match last {
            Some(last) if name.as_str() <= last => millis += 1,
            _ => return Ok(name),
        }
        millis += 1;
    }
    Err(clock_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_through_local_time() {
        let millis = 1_700_000_000_123;
        let name = file_name_for(millis).unwrap();
        assert_eq!(name.len(), NAME_DIGITS);
        assert!(name.ends_with("123"));
        assert_eq!(millis_of_file_name(&name), Some(millis));
        assert_eq!(millis_of_file_name("2023111422132012"), None);
    }

    #[test]
    fn names_always_move_forward() {
        let future = file_name_for(now_millis() + 3_600_000).unwrap();
        let next = next_file_name(Some(&future)).unwrap();
        assert!(next > future);
        assert_eq!(
            millis_of_file_name(&next),
            millis_of_file_name(&future).map(|m| m + 1)
        );
    }
}
