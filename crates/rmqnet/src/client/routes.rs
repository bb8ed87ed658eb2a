//! The routes a producer knows, as data its owner pushes in when it learns or refreshes
//! one (topic -> the endpoint of each queue's shard), and the queue choice made from
//! them. Nothing here looks a route up: a topic with no route is the caller's to resolve.

use std::collections::HashMap;

/// Where a batch of a queue goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination<'a> {
    /// The shard's endpoint.
    Endpoint(&'a str),
    /// No route known for the topic, or the queue is not in the one known.
    Unknown,
}

#[derive(Default)]
pub struct Routes {
    /// Topic -> the endpoint serving each queue, by queue id.
    endpoints: HashMap<String, Vec<String>>,
    /// Topic -> the round robin's next slot.
    next: HashMap<String, u64>,
}

impl Routes {
    pub fn set(&mut self, topic: &str, endpoints: Vec<String>) {
        self.endpoints.insert(topic.to_owned(), endpoints);
    }

    /// How many queues the topic's route has, if one is known.
    pub fn queue_count(&self, topic: &str) -> Option<usize> {
        self.endpoints.get(topic).map(Vec::len)
    }

    /// The queue for a message: the CRC-32 of `sharding_key` (so a key always goes to the
    /// same queue) or else round robin; None when the topic's route is not known.
    pub fn choose_queue(&mut self, topic: &str, sharding_key: Option<&[u8]>) -> Option<i32> {
        let count = self.queue_count(topic)?.max(1) as u64;
        let slot = match sharding_key {
            Some(key) => u64::from(crc32fast::hash(key)) % count,
            None => {
                let next = self.next.entry(topic.to_owned()).or_insert(0);
                let slot = *next % count;
                *next = next.wrapping_add(1);
                slot
            }
        };
        Some(slot as i32)
    }

    pub fn destination(&self, topic: &str, queue_id: i32) -> Destination<'_> {
        let endpoint = usize::try_from(queue_id)
            .ok()
            .and_then(|queue| self.endpoints.get(topic)?.get(queue));
        endpoint.map_or(Destination::Unknown, |endpoint| {
            Destination::Endpoint(endpoint)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes() -> Routes {
        let mut routes = Routes::default();
        routes.set("t", vec!["a:1".into(), "b:2".into(), "a:1".into()]);
        routes
    }

    #[test]
    fn round_robin_cycles_and_keys_stick() {
        let mut routes = routes();
        let chosen: Vec<_> = (0..4)
            .filter_map(|_| routes.choose_queue("t", None))
            .collect();
        assert_eq!(chosen, [0, 1, 2, 0]);
        let key = routes.choose_queue("t", Some(b"order-7"));
        assert_eq!(key, Some((crc32fast::hash(b"order-7") % 3) as i32));
        assert_eq!(routes.choose_queue("t", Some(b"order-7")), key);
        assert_eq!(routes.choose_queue("unknown", None), None);
    }

    #[test]
    fn destinations_follow_the_route() {
        let mut routes = routes();
        assert_eq!(routes.destination("t", 1), Destination::Endpoint("b:2"));
        assert_eq!(routes.destination("t", 3), Destination::Unknown);
        assert_eq!(routes.destination("t", -1), Destination::Unknown);
        assert_eq!(routes.destination("u", 0), Destination::Unknown);
        routes.set("t", vec!["c:3".into()]);
        assert_eq!(routes.destination("t", 0), Destination::Endpoint("c:3"));
        assert_eq!(routes.destination("t", 1), Destination::Unknown);
    }
}
