"""Property-based: the store behaves like a dict of lists under random puts, batches,
reopens and reads, with segments small enough to roll often."""

from __future__ import annotations

import tempfile
from pathlib import Path

import rmq
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

TOPICS = st.sampled_from(["A", "B", "%RETRY%g", "x-y_z"])
QUEUES = st.integers(min_value=0, max_value=3)
BODIES = st.binary(max_size=300)
TAGS = st.one_of(st.none(), st.sampled_from(["TagA", "TagB", "标签"]))
KEYS = st.lists(st.text(alphabet="abcxyz0123é", min_size=1, max_size=6), max_size=3)
OPTIONS = {"commitlog_segment_size": 4096, "consume_queue_entries_per_file": 8}


class StoreModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory()
        self.store = rmq.Store(Path(self.directory.name), **OPTIONS)
        self.model: dict[tuple[str, int], list[tuple[bytes, str | None, list[str]]]] = {}

    @rule(topic=TOPICS, queue_id=QUEUES, body=BODIES, tags=TAGS, keys=KEYS)
    def put(
        self, topic: str, queue_id: int, body: bytes, tags: str | None, keys: list[str]
    ) -> None:
        result = self.store.put(topic, body, queue_id=queue_id, tags=tags, keys=keys)
        queue = self.model.setdefault((topic, queue_id), [])
        assert result.queue_offset == len(queue)
        queue.append((body, tags, keys))

    @rule(topic=TOPICS, queue_id=QUEUES, bodies=st.lists(BODIES, min_size=1, max_size=6))
    def put_batch(self, topic: str, queue_id: int, bodies: list[bytes]) -> None:
        self.store.put_batch(topic, queue_id, list(bodies))
        self.model.setdefault((topic, queue_id), []).extend((b, None, []) for b in bodies)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = rmq.Store(Path(self.directory.name), **OPTIONS)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def read_a_range(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        expected = self.model[key]
        offset = data.draw(st.integers(min_value=0, max_value=len(expected)))
        count = data.draw(st.integers(min_value=1, max_value=10))
        messages = self.store.get(key[0], key[1], offset, count)
        assert [(m.body, m.tags, m.keys) for m in messages] == expected[offset : offset + count]
        assert [m.queue_offset for m in messages] == list(range(offset, offset + len(messages)))

    @invariant()
    def offsets_match(self) -> None:
        for (topic, queue_id), messages in self.model.items():
            assert self.store.max_offset(topic, queue_id) == len(messages)

    def teardown(self) -> None:
        self.store.close()
        self.directory.cleanup()


StoreModel.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoreModel = StoreModel.TestCase
