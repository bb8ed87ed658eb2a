//! Durable replacement of small files: write a temporary file, fsync it, keep the old
//! version as `<name>.bak`, rename the new one into place and fsync the directory, so a
//! crash leaves either the old or the new content, never a torn file.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

pub fn backup_path(path: &Path) -> PathBuf {
    sibling(path, ".bak")
}

pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).at(dir)?;
    let temporary = sibling(path, ".tmp");
    {
        let mut file = File::create(&temporary).at(&temporary)?;
        file.write_all(contents).at(&temporary)?;
        file.sync_all().at(&temporary)?;
    }
    if path.exists() {
        let backup = backup_path(path);
        fs::copy(path, &backup).at(&backup)?;
    }
    fs::rename(&temporary, path).at(path)?;
    sync_dir(dir)
}

pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).at(dir)?.sync_all().at(dir)
}

/// The file's text, or its backup's when the file is missing, empty or rejected by
/// `parse` (RocketMQ's config loading does the same).
pub fn read_with_backup<T>(path: &Path, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>> {
    for candidate in [path.to_path_buf(), backup_path(path)] {
        match fs::read_to_string(&candidate) {
            Ok(text) if !text.trim().is_empty() => {
                if let Some(value) = parse(&text) {
                    return Ok(Some(value));
                }
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(crate::error::Error::io(candidate, error)),
        }
    }
    Ok(None)
}
