//! What the tier fetched once and keeps in memory by key within a byte budget, oldest
//! kept first out: index files' slot tables and whole queue files (`remote_index.rs`,
//! `remote_queue.rs`) and queue-grouped objects' footers (`mapped_reads.rs`). Each never
//! changes once uploaded, so one GET serves every later read of it. Values are shared, so
//! a reader may remember one by a `Weak` (a queue file it is going through) without
//! keeping it past the budget.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use bytes::Bytes;

use super::grouped_object::Layout;

/// The bytes a kept value counts against the budget.
pub trait Footprint {
    fn footprint(&self) -> usize;
}

impl Footprint for Bytes {
    fn footprint(&self) -> usize {
        self.len()
    }
}

impl Footprint for Layout {
    fn footprint(&self) -> usize {
        Layout::footprint(self)
    }
}

#[derive(Debug)]
pub struct BoundedCache<K, V> {
    budget: usize,
    used: usize,
    kept: HashMap<K, Arc<V>>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V: Footprint> BoundedCache<K, V> {
    pub fn new(budget: u64) -> Self {
        BoundedCache {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            used: 0,
            kept: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn get<Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.kept.get(key).cloned()
    }

    /// Keep `value`, letting the oldest go while over budget (a value larger than the
    /// whole budget is not kept: each read of it fetches it again).
    pub fn insert(&mut self, key: K, value: Arc<V>) {
        let size = value.footprint();
        if size > self.budget || self.kept.contains_key(&key) {
            return;
        }
        while self.used + size > self.budget {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.kept.remove(&oldest) {
                self.used -= gone.footprint();
            }
        }
        self.used += size;
        self.kept.insert(key.clone(), value);
        self.order.push_back(key);
    }

    /// Forget the value kept for `key` (what it was read from left the tier).
    pub fn forget(&mut self, key: &K) {
        if let Some(gone) = self.kept.remove(key) {
            self.used -= gone.footprint();
            self.order.retain(|kept| kept != key);
        }
    }
}
