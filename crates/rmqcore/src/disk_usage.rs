//! How full the filesystem holding a store is, and the state that refuses writes above
//! the warning ratio (format §5.5). Tests can make the store see a chosen usage.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct DiskUsage {
    pub path: PathBuf,
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// Used over total, as RocketMQ computes it (free blocks, not those free to users).
    pub ratio: f64,
    /// True when the ratio comes from the test hook rather than the filesystem.
    pub overridden: bool,
}

pub fn measure(path: &Path) -> Result<DiskUsage> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid("path", "contains a NUL byte"))?;
    // SAFETY: statvfs fills the struct; a zeroed struct is a valid initial value.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and pointer.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stats) } != 0 {
        return Err(Error::io(path, std::io::Error::last_os_error()));
    }
    let block = stats.f_frsize as u64;
    let total = stats.f_blocks as u64 * block;
    let free = stats.f_bfree as u64 * block;
    let used = total.saturating_sub(free);
    let ratio = if total == 0 {
        0.0
    } else {
        used as f64 / total as f64
    };
    Ok(DiskUsage {
        path: path.to_path_buf(),
        total_bytes: total,
        used_bytes: used,
        ratio,
        overridden: false,
    })
}

/// Whether writes are refused, refreshed by the retention thread.
///
/// Thread safety: all methods take `&self`.
#[derive(Debug)]
pub struct DiskGuard {
    path: PathBuf,
    warning_ratio: f64,
    usage_override: Mutex<Option<f64>>,
    refusing: Mutex<Option<DiskUsage>>,
    /// Whether `refusing` holds a usage: every put checks, and a flag read spares it
    /// the lock.
    refusing_now: AtomicBool,
}

impl DiskGuard {
    pub fn new(path: &Path, warning_ratio: f64) -> Self {
        DiskGuard {
            path: path.to_path_buf(),
            warning_ratio,
            usage_override: Mutex::new(None),
            refusing: Mutex::new(None),
            refusing_now: AtomicBool::new(false),
        }
    }

    pub fn usage(&self) -> Result<DiskUsage> {
        let mut usage = measure(&self.path)?;
        if let Some(ratio) = *self.usage_override.lock().expect("usage override lock") {
            usage.ratio = ratio;
            usage.used_bytes = (usage.total_bytes as f64 * ratio) as u64;
            usage.overridden = true;
        }
        Ok(usage)
    }

    /// Test hook: see `ratio` instead of the filesystem's figure (`None` to stop).
    pub fn set_usage_override(&self, ratio: Option<f64>) -> Result<DiskUsage> {
        if let Some(ratio) = ratio {
            if !(0.0..=1.0).contains(&ratio) {
                return Err(Error::invalid(
                    "ratio",
                    format!("{ratio} is not between 0 and 1"),
                ));
            }
        }
        *self.usage_override.lock().expect("usage override lock") = ratio;
        self.refresh()
    }

    /// Measure again and start or stop refusing writes.
    pub fn refresh(&self) -> Result<DiskUsage> {
        let usage = self.usage()?;
        let mut refusing = self.refusing.lock().expect("disk guard lock");
        *refusing = (usage.ratio > self.warning_ratio).then(|| usage.clone());
        self.refusing_now
            .store(refusing.is_some(), Ordering::Release);
        Ok(usage)
    }

    pub fn check_writable(&self) -> Result<()> {
        if !self.refusing_now.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*self.refusing.lock().expect("disk guard lock") {
            Some(usage) => Err(Error::DiskFull {
                path: usage.path.clone(),
                usage: usage.ratio,
                threshold: self.warning_ratio,
            }),
            None => Ok(()),
        }
    }
}
