//! Index files kept only in the store's tier (format §7.1): a query reads them after the
//! local files, each in two range reads (its slot, then the slot's run), because a
//! compacted file keeps a slot's entries together.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::compacted::{CompactedEntry, CompactedHeader};
use super::query::{visit_run, Probe};
use super::IndexService;
use crate::error::Result;

/// Where the index's remote files come from (the tier implements it).
pub trait RemoteIndex: Send + Sync + std::fmt::Debug {
    /// The compacted files only the tier holds, newest first, with their headers.
    fn remote_files(&self) -> Vec<(String, CompactedHeader)>;
    /// The run of `key_hash`'s slot in file `name`, newest first.
    fn remote_run(
        &self,
        name: &str,
        header: &CompactedHeader,
        key_hash: i32,
    ) -> Result<Vec<CompactedEntry>>;
}

impl IndexService {
    /// Query `remote`'s files after the local ones from now on.
    pub fn attach_remote(&self, remote: Arc<dyn RemoteIndex>) {
        let _ = self.remote.set(remote);
    }

    /// Let go of a file whose compacted form the tier holds: it leaves the list and its
    /// local files are deleted; queries read it from the tier from then on.
    pub fn evict_file(&self, name: &str) -> Result<bool> {
        let removed = {
            let mut files = self.shared.files.write().expect("index file list lock");
            let Some(at) = files.iter().position(|handle| handle.name == name) else {
                return Ok(false);
            };
            files.remove(at)
        };
        removed.remove_files()?;
        Ok(true)
    }

    pub(super) fn visit_remote(
        &self,
        probe: Probe,
        visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let Some(remote) = self.remote.get() else {
            return Ok(());
        };
        for (name, header) in remote.remote_files() {
            if header.entry_count == 0
                || !probe.overlaps(header.begin_timestamp, header.end_timestamp)
            {
                continue;
            }
            let run = remote.remote_run(&name, &header, probe.key_hash)?;
            if visit_run(&header, run.into_iter(), probe, visit)?.is_break() {
                break;
            }
        }
        Ok(())
    }
}
