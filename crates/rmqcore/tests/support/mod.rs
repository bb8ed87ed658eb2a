//! What several of the engine's integration tests share.

use std::fs;
use std::path::Path;

/// Copy a store directory as it is this moment, e.g. to keep the image a crash would
/// leave while the store stays open.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}
