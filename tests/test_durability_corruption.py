"""Promise 5: corruption is detected and valid data is never thrown away.

A damaged tail after a crash is cut exactly before the first damaged record; damage
below the checkpoint (outside the unflushed tail) is reported by reads and `verify`,
with the valid records around it kept. Reopening ten times gives the same store."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import rmq
from rmq.errors import CorruptRecordError

OPTIONS = {"commitlog_segment_size": 16 * 1024, "consume_queue_entries_per_file": 64}
Written = list[tuple[int, int, bytes, int, int]]  # queue, queue offset, body, log offset, size


def write_store(path: Path, seed: int) -> Written:
    generator = random.Random(seed)
    written: Written = []
    with rmq.Store(path, **OPTIONS) as store:
        for index in range(240):
            queue_id = index % 3
            body = generator.randbytes(generator.choice([1, 40, 300, 900]))
            result = store.put("Damage", body, queue_id=queue_id, tags="t", keys=[f"k{index}"])
            written.append(
                (queue_id, result.queue_offset, body, result.commitlog_offset, result.store_size)
            )
    return written


def locate(path: Path, log_offset: int) -> tuple[Path, int]:
    segment = OPTIONS["commitlog_segment_size"]
    start = log_offset // segment * segment
    return path / "commitlog" / f"{start:020d}", log_offset - start


def simulate_crash_with_checkpoint_at(path: Path, log_offset: int) -> None:
    """Leave the store as a crash would: `abort` present, checkpoint at `log_offset`."""
    (path / "abort").write_text("4242")
    with (path / "checkpoint").open("r+b") as file:
        file.seek(520)
        file.write(struct.pack(">q", log_offset))


def flip(data: bytearray, position: int) -> None:
    data[position] ^= 0x40


def body_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 88 + (len(record) - 120) // 2)


def magic_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 5)


def length_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 2)


def body_length_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 86)


def physical_offset_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 33)


def queue_offset_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 27)


def zeroed_range(record: bytearray, generator: random.Random) -> None:
    start = generator.randrange(0, len(record) - 4)
    end = min(len(record), start + generator.randrange(4, 64))
    record[start:end] = bytes(end - start)


def store_timestamp_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 60)  # covered only by the record CRC property


def born_host_flip(record: bytearray, _: random.Random) -> None:
    flip(record, 49)


def property_flip(record: bytearray, _: random.Random) -> None:
    flip(record, len(record) - 25)  # inside the KEYS value, before the CRC region


DAMAGE: dict[str, Callable[[bytearray, random.Random], None]] = {
    "body bit flip": body_flip,
    "magic bit flip": magic_flip,
    "total size bit flip": length_flip,
    "body length bit flip": body_length_flip,
    "physical offset bit flip": physical_offset_flip,
    "queue offset bit flip": queue_offset_flip,
    "zeroed range": zeroed_range,
    "store timestamp bit flip": store_timestamp_flip,
    "born host bit flip": born_host_flip,
    "property bit flip": property_flip,
}


def damage_record(
    path: Path, log_offset: int, size: int, damage: Callable[..., None], seed: int
) -> None:
    segment, position = locate(path, log_offset)
    data = bytearray(segment.read_bytes())
    record = data[position : position + size]
    damage(record, random.Random(seed))
    data[position : position + size] = record
    segment.write_bytes(bytes(data))


def store_state(path: Path) -> tuple[int, list[int], list[bytes]]:
    with rmq.Store(path, **OPTIONS) as store:
        bodies = [m.body for q in range(3) for m in store.get("Damage", q, 0, 1000)]
        return (
            store.commitlog_max_offset(),
            [store.max_offset("Damage", q) for q in range(3)],
            bodies,
        )


def assert_cut_exactly_before(path: Path, written: Written, victim: int) -> None:
    victim_offset = written[victim][3]
    with rmq.Store(path, **OPTIONS) as store:
        report = store.recovery_report
        assert report.mode == "abnormal"
        assert report.valid_end_offset == victim_offset, report
        assert report.stop_reason is not None
        for queue_id, queue_offset, body, _, _ in written[:victim]:
            (message,) = store.get("Damage", queue_id, queue_offset, 1)
            assert message.body == body
        assert store.commitlog_max_offset() == victim_offset
        assert store.verify().clean
    first = store_state(path)
    for _ in range(10):
        assert store_state(path) == first


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_tail_record_is_cut_exactly(tmp_path: Path, kind: str) -> None:
    written = write_store(tmp_path, seed=len(kind))
    victim = random.Random(kind).randrange(len(written) - 60, len(written))
    checkpoint_record = victim - 30
    damage_record(tmp_path, written[victim][3], written[victim][4], DAMAGE[kind], seed=victim)
    simulate_crash_with_checkpoint_at(tmp_path, written[checkpoint_record][3])
    assert_cut_exactly_before(tmp_path, written, victim)


def test_garbage_from_inside_a_record_to_the_segment_end(tmp_path: Path) -> None:
    generator = random.Random(11)
    for trial in range(5):
        path = tmp_path / f"trial{trial}"
        written = write_store(path, seed=trial)
        victim = generator.randrange(len(written) - 60, len(written))
        segment, position = locate(path, written[victim][3])
        data = bytearray(segment.read_bytes())
        start = position + generator.randrange(0, written[victim][4])
        data[start:] = generator.randbytes(len(data) - start)
        segment.write_bytes(bytes(data))
        simulate_crash_with_checkpoint_at(path, written[victim - 40][3])
        assert_cut_exactly_before(path, written, victim)


def test_torn_final_record(tmp_path: Path) -> None:
    written = write_store(tmp_path, seed=5)
    last = len(written) - 1
    segment, position = locate(tmp_path, written[last][3])
    data = bytearray(segment.read_bytes())
    tear = position + written[last][4] // 2
    data[tear : position + written[last][4]] = bytes(position + written[last][4] - tear)
    segment.write_bytes(bytes(data))
    simulate_crash_with_checkpoint_at(tmp_path, written[last - 10][3])
    assert_cut_exactly_before(tmp_path, written, last)


def test_damage_below_the_checkpoint_is_reported_and_keeps_neighbours(tmp_path: Path) -> None:
    written = write_store(tmp_path, seed=9)
    victim = 50  # well inside the flushed part of the log
    damage_record(tmp_path, written[victim][3], written[victim][4], body_flip, seed=1)
    with rmq.Store(tmp_path, **OPTIONS) as store:
        assert store.commitlog_max_offset() == written[-1][3] + written[-1][4]
        queue_id, queue_offset = written[victim][0], written[victim][1]
        with pytest.raises(CorruptRecordError) as raised:
            store.get("Damage", queue_id, queue_offset, 1)
        assert raised.value.offset >= 0
        assert raised.value.file.endswith(locate(tmp_path, written[victim][3])[0].name)
        for other in (victim - 1, victim + 1, len(written) - 1):
            q, o, body, _, _ = written[other]
            assert store.get("Damage", q, o, 1)[0].body == body
        report = store.verify()
        assert not report.clean
        assert [kind for kind, _ in report.differences] == ["corrupt_record"]
        assert str(written[victim][3]) in report.differences[0][1]


def test_rebuild_recreates_queues_and_index_from_the_log(tmp_path: Path) -> None:
    written = write_store(tmp_path, seed=3)
    for queue_file in (tmp_path / "consumequeue").glob("Damage/1/*"):
        queue_file.write_bytes(bytes(queue_file.stat().st_size))
    with rmq.Store(tmp_path, **OPTIONS) as store:
        assert not store.verify().clean
        assert store.rebuild() == len(written)
        assert store.verify().clean
        for queue_id, queue_offset, body, _, _ in written[::17]:
            assert store.get("Damage", queue_id, queue_offset, 1)[0].body == body
        key_index = 120
        (found,) = store.query_by_key("Damage", f"k{key_index}")
        assert found.body == written[key_index][2]
