//! The `lock` file (format §4.3): an exclusive POSIX record lock on byte 0, as RocketMQ's
//! `FileChannel.tryLock(0, 1, false)` takes it, so rmq and a RocketMQ broker never open
//! the same store for writing at once. The lock goes when the file is closed.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, IoContext, Result};

static LOCKED_IN_THIS_PROCESS: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

#[derive(Debug)]
pub struct StoreLock {
    _file: File,
    root: PathBuf,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        if let Some(locked) = LOCKED_IN_THIS_PROCESS
            .lock()
            .expect("lock registry")
            .as_mut()
        {
            locked.remove(&self.root);
        }
    }
}

impl StoreLock {
    pub fn acquire(root: &Path) -> Result<Self> {
        let canonical = root.canonicalize().at(root)?;
        {
            let mut registry = LOCKED_IN_THIS_PROCESS.lock().expect("lock registry");
            if !registry
                .get_or_insert_with(HashSet::new)
                .insert(canonical.clone())
            {
                return Err(Error::Locked {
                    path: root.to_path_buf(),
                });
            }
        }
        Self::acquire_file(root)
            .map(|file| StoreLock {
                _file: file,
                root: canonical.clone(),
            })
            .inspect_err(|_| {
                if let Some(locked) = LOCKED_IN_THIS_PROCESS
                    .lock()
                    .expect("lock registry")
                    .as_mut()
                {
                    locked.remove(&canonical);
                }
            })
    }

    fn acquire_file(root: &Path) -> Result<File> {
        let path = root.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .at(&path)?;
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
                Some(libc::EACCES | libc::EAGAIN) => Err(Error::Locked {
                    path: root.to_path_buf(),
                }),
                _ => Err(Error::io(path, error)),
            };
        }
        file.write_all(b"lock").at(&path)?;
        file.sync_data().at(&path)?;
        Ok(file)
    }
}
