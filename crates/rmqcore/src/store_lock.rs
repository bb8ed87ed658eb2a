//! The `lock` file (format §4.3): an exclusive POSIX record lock on byte 0, as RocketMQ's
//! `FileChannel.tryLock(0, 1, false)` takes it, so rmq and a RocketMQ broker never open
//! the same store for writing at once. The lock goes when the file is closed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::error::{Error, IoContext, Result};

#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    pub fn acquire(root: &Path) -> Result<Self> {
        let path = root.join("lock");
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).at(&path)?;
        // SAFETY: a zeroed flock is a valid value; fields are set below.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = libc::F_WRLCK as libc::c_short;
        request.l_whence = libc::SEEK_SET as libc::c_short;
        request.l_start = 0;
        request.l_len = 1;
        // SAFETY: fcntl with F_SETLK and a valid flock pointer.
        let status = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &request) };
        if status != 0 {
            let error = std::io::Error::last_os_error();
            return match error.raw_os_error() {
                Some(libc::EACCES | libc::EAGAIN) => Err(Error::Locked { path: root.to_path_buf() }),
                _ => Err(Error::io(path, error)),
            };
        }
        file.write_all(b"lock").at(&path)?;
        file.sync_data().at(&path)?;
        Ok(StoreLock { _file: file })
    }
}
