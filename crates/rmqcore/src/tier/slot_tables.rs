//! Slot tables of compacted index files only the tier holds, and whole queue files, kept
//! in memory by name within a byte budget: each is small and never changes once
//! uploaded, so one GET serves every later lookup in it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;

/// Slot tables of index files only the tier holds (and whole queue files,
/// `remote_queue.rs`), oldest kept first out past a budget.
#[derive(Debug)]
pub struct SlotTables {
    budget: usize,
    used: usize,
    /// Shared, so that a reader may remember one by a `Weak` (a queue file it is going
    /// through) without keeping it past the budget.
    tables: HashMap<String, Arc<Bytes>>,
    order: VecDeque<String>,
}

impl SlotTables {
    pub fn new(budget: u64) -> Self {
        SlotTables {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            used: 0,
            tables: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<Bytes> {
        self.tables.get(name).map(|table| Bytes::clone(table))
    }

    /// The kept table itself: what a `Weak` to it stays alive with.
    pub(super) fn get_shared(&self, name: &str) -> Option<Arc<Bytes>> {
        self.tables.get(name).cloned()
    }

    /// Keep `table`, letting the oldest go while over budget (a table larger than the
    /// whole budget is not kept: its lookups read their slot each time).
    pub(super) fn insert(&mut self, name: &str, table: Bytes) {
        self.insert_shared(name, Arc::new(table));
    }

    /// `insert`, of a table already shared.
    pub(super) fn insert_shared(&mut self, name: &str, table: Arc<Bytes>) {
        if table.len() > self.budget || self.tables.contains_key(name) {
            return;
        }
        while self.used + table.len() > self.budget {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.tables.remove(&oldest) {
                self.used -= gone.len();
            }
        }
        self.used += table.len();
        self.tables.insert(name.to_string(), table);
        self.order.push_back(name.to_string());
    }
}
