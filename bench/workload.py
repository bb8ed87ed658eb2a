"""Messages every system in a benchmark writes: same bodies, tags and keys, same order.

Bodies come from a small pool of random buffers (cycled, so that building the workload
costs no time or memory worth mentioning); each message has one of four tags and a unique
key. ``ordered`` lists every message's body in order (references into the pool, 8 bytes
each), so a timed loop takes a message's body, or a batch's bodies as a slice, the way a
program holding its messages in a list would. Nothing here is timed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

TOPIC = "BenchTopic"
TAGS = ("TagA", "TagB", "TagC", "TagD")
POOL = 256
BATCH = 128

# Fixed part of a RocketMQ V1 commit-log record (format §1): every field but the body, the
# topic and the properties. Used only when rmq cannot be asked for its record size.
V1_FIXED = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2


@dataclass
class Workload:
    count: int
    body_size: int
    bodies: list[bytes]
    keys: list[str]
    # Bodies only: no tag and no key, so nothing but the message itself is stored.
    plain: bool = False
    ordered: list[bytes] = field(default_factory=list)
    # Queues of the topic that rmq spreads the messages over, a batch (or a single put) to
    # each in turn; the key-value peers have no queues and ignore it.
    queues: int = 1

    def __post_init__(self) -> None:
        if not self.ordered:
            pool = self.bodies
            self.ordered = [pool[i % len(pool)] for i in range(self.count)]

    def body(self, i: int) -> bytes:
        return self.ordered[i]

    def tag(self, i: int) -> str:
        return TAGS[i & 3]

    @property
    def payload_bytes(self) -> int:
        return self.count * self.body_size


def make(
    count: int, body_size: int, seed: int = 8, *, plain: bool = False, queues: int = 1
) -> Workload:
    rng = random.Random(seed * 1_000_003 + body_size)
    bodies = [rng.randbytes(body_size) for _ in range(min(POOL, max(1, count)))]
    keys = [] if plain else [f"order-{i:09d}" for i in range(count)]
    return Workload(
        count=count, body_size=body_size, bodies=bodies, keys=keys, plain=plain, queues=queues
    )


def estimated_record_size(
    body_size: int, key: str = "order-000000000", *, plain: bool = False
) -> int:
    """The length rmq's commit-log record would have (fallback when rmq is not built)."""
    crc = "__CRC32#\x01" + "0" * 10 + "\x02"
    props = crc if plain else f"TAGS\x01{TAGS[0]}\x02KEYS\x01{key}\x02{crc}"
    return V1_FIXED + body_size + len(TOPIC) + len(props.encode())


def rmq_record_size(body_size: int, workdir: str, *, plain: bool = False) -> tuple[int, str]:
    """rmq's real record size for this workload, asked of a scratch store if rmq imports."""
    try:
        import rmq

        with rmq.Store(workdir, commitlog_segment_size=1 << 22) as store:
            if plain:
                res = store.put(TOPIC, b"x" * body_size)
            else:
                res = store.put(TOPIC, b"x" * body_size, tags=TAGS[0], keys="order-000000000")
            return int(res.store_size), "measured"
    except Exception:
        return estimated_record_size(body_size, plain=plain), "estimated"
