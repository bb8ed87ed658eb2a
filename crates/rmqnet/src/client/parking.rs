//! The batches that wait for a route: `route` finds each batch's shard, and parks a batch
//! whose topic has no known route (or whose last try said the route may be stale) until
//! its owner pushes one in (`set_route`) or gives up on it (`take_unrouted`). The owner
//! learns which topics to look up from `wanted_routes`.

use std::time::Instant;

use super::batch::{Batch, Finished};
use super::books::Core;
use super::outcome::SendOutcome;
use super::routes::Destination;

/// The batches bound for each shard endpoint, in the order the endpoints came up.
pub type ByEndpoint<O> = Vec<(String, Vec<Batch<O>>)>;

impl<O: Clone> Core<O> {
    /// Group batches by the endpoint of their queue's shard. A batch with no known
    /// destination, or whose route may be stale, waits for a fresh route (its topic is
    /// wanted); one whose queue is missing from a fresh route fails.
    pub fn route(&self, batches: Vec<Batch<O>>) -> (ByEndpoint<O>, Vec<Finished<O>>) {
        let now = Instant::now();
        let mut groups: ByEndpoint<O> = Vec::new();
        let mut failed = Vec::new();
        let mut state = self.lock();
        let mut parked = false;
        for mut batch in batches {
            batch.mark_sent(now);
            // A batch whose last try said the route may be stale waits for a fresh one.
            let destination = (!batch.refresh_route)
                .then(|| state.routes.destination(&batch.topic, batch.queue_id));
            match destination {
                Some(Destination::Endpoint(endpoint)) => {
                    match groups.iter_mut().find(|(known, _)| known == endpoint) {
                        Some((_, group)) => group.push(batch),
                        None => groups.push((endpoint.to_owned(), vec![batch])),
                    }
                }
                Some(Destination::Unknown) if batch.route_fresh => {
                    let queues = state.routes.queue_count(&batch.topic).unwrap_or(0);
                    let queue_id = batch.queue_id;
                    let outcome = SendOutcome::NoSuchQueue { queue_id, queues };
                    failed.push(Finished { batch, outcome });
                }
                _ => {
                    state.wanted.insert(batch.topic.clone());
                    state.unrouted.push(batch);
                    parked = true;
                }
            }
        }
        drop(state);
        if parked {
            self.wake_routes();
        }
        (groups, failed)
    }

    /// A route was learnt: remember it, and make the batches that waited for it due.
    /// `fresh`: just asked of the supervisor. A batch whose queue is missing from a fresh
    /// route fails; from one that may be stale (a cached one), it waits for a fresh one.
    pub fn set_route(&self, topic: &str, endpoints: Vec<String>, fresh: bool) {
        self.update(|state| {
            state.routes.set(topic, endpoints);
            state.wanted.remove(topic);
            let now = Instant::now();
            for mut batch in take_topic(&mut state.unrouted, topic) {
                batch.refresh_route = false;
                batch.route_fresh = fresh;
                state.retries.insert(batch.key(), (batch, now));
            }
        });
    }

    /// Ask the owner for `topic`'s route (a send found none).
    pub fn want_route(&self, topic: &str) {
        self.update(|state| state.wanted.insert(topic.to_owned()));
    }

    /// The batches that waited for `topic`'s route, whose lookup failed.
    pub fn take_unrouted(&self, topic: &str) -> Vec<Batch<O>> {
        self.update(|state| {
            state.wanted.remove(topic);
            take_topic(&mut state.unrouted, topic)
        })
    }

    /// For the owner's route thread: the topics whose route is wanted, waiting up to
    /// `until`; None once the producer is stopping, or closed with nothing left.
    pub fn wanted_routes(&self, until: Instant) -> Option<Vec<String>> {
        self.wait_for_routes(until, |state| {
            !state.wanted.is_empty() || state.stopping || (state.closed && state.idle())
        });
        let mut state = self.lock();
        if state.stopping || (state.closed && state.idle()) {
            return None;
        }
        Some(std::mem::take(&mut state.wanted).into_iter().collect())
    }
}

fn take_topic<O>(batches: &mut Vec<Batch<O>>, topic: &str) -> Vec<Batch<O>> {
    let (taken, kept) = std::mem::take(batches)
        .into_iter()
        .partition(|batch| batch.topic == topic);
    *batches = kept;
    taken
}
