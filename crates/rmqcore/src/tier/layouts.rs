//! Layouts (footers) of queue-grouped objects only the tier holds, kept in memory by
//! segment within a byte budget, as index files' slot tables are: a footer never changes
//! once uploaded, so the GET that loaded it with the object's first read serves every
//! later read of the object.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::grouped_object::Layout;

#[derive(Debug)]
pub struct Layouts {
    budget: usize,
    used: usize,
    layouts: HashMap<u64, Arc<Layout>>,
    order: VecDeque<u64>,
}

impl Layouts {
    pub fn new(budget: u64) -> Self {
        Layouts {
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            used: 0,
            layouts: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn get(&self, start_offset: u64) -> Option<Arc<Layout>> {
        self.layouts.get(&start_offset).cloned()
    }

    /// Keep `layout`, letting the oldest go while over budget (one larger than the whole
    /// budget is not kept: each read of its object loads it again).
    pub fn insert(&mut self, start_offset: u64, layout: Arc<Layout>) {
        let size = layout.footprint();
        if size > self.budget || self.layouts.contains_key(&start_offset) {
            return;
        }
        while self.used + size > self.budget {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.layouts.remove(&oldest) {
                self.used -= gone.footprint();
            }
        }
        self.used += size;
        self.layouts.insert(start_offset, layout);
        self.order.push_back(start_offset);
    }

    /// Forget a segment's layout (the segment left the tier).
    pub fn forget(&mut self, start_offset: u64) {
        if let Some(gone) = self.layouts.remove(&start_offset) {
            self.used -= gone.footprint();
            self.order.retain(|&start| start != start_offset);
        }
    }
}
