//! Where the bodies of one queue read lie in the mapped commit log: the segments (owners)
//! that hold them, kept once each, and each body's owner, position and length. A
//! `BodyBatch` holds them; its iterator and views read the bodies through them.

use rmqcore::commit_log::RecordOwner;
use rmqcore::record::RecordView;

/// Where one body lies: in which owner, from where, how long.
#[derive(Clone, Copy)]
struct BodyPlace {
    owner: u32,
    position: usize,
    length: usize,
}

/// Collects the places of a read's bodies as the store hands its records out (without
/// the GIL), keeping each record's owner once.
pub struct BodyPlaces {
    owners: Vec<RecordOwner>,
    places: Vec<BodyPlace>,
    queue_offsets: Vec<i64>,
}

impl BodyPlaces {
    pub fn with_capacity(messages: usize) -> Self {
        // Reserving for a huge `max_count` would be a waste; a read grows as it goes.
        let messages = messages.min(4096);
        BodyPlaces {
            owners: Vec::with_capacity(1),
            places: Vec::with_capacity(messages),
            queue_offsets: Vec::with_capacity(messages),
        }
    }

    pub fn push(&mut self, view: &RecordView<'_>, owner: &RecordOwner) {
        if !self.owners.last().is_some_and(|last| last.is_same(owner)) {
            self.owners.push(owner.clone());
        }
        self.places.push(BodyPlace {
            owner: (self.owners.len() - 1) as u32,
            position: owner.position_of(view.body),
            length: view.body.len(),
        });
        self.queue_offsets.push(view.queue_offset);
    }

    /// The queue offset of each body, in order, taken out (the batch keeps them as a
    /// column of its own).
    pub fn take_queue_offsets(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.queue_offsets)
    }

    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// The bodies' lengths added up.
    pub fn total_length(&self) -> usize {
        self.places.iter().map(|place| place.length).sum()
    }

    /// Body `index`, which is below `len()`.
    pub fn body(&self, index: usize) -> &[u8] {
        let place = self.places[index];
        self.owners[place.owner as usize].bytes(place.position, place.length)
    }
}
