"""A writer process for crash tests: puts messages with sync flush from several threads
and prints ``open`` once the store is open, then ``<queue> <offset> <seed>`` for each
acknowledged one, so the parent knows
exactly what was acknowledged before it killed this process with SIGKILL."""

from __future__ import annotations

import random
import sys
import threading

import rmq


def body_for(queue_id: int, seed: int) -> bytes:
    """Deterministic body the parent can recompute from the acknowledgement."""
    generator = random.Random(queue_id * 1_000_003 + seed)
    size = generator.choice([0, 1, 17, 100, 1000, 3000])
    return generator.randbytes(size)


def main() -> None:
    path, flush_type, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    consume_queue_type = sys.argv[4] if len(sys.argv) > 4 else "file"
    store = rmq.Store(
        path,
        commitlog_segment_size=64 * 1024,
        consume_queue_entries_per_file=64,
        flush_disk_type=flush_type,
        consume_queue_type=consume_queue_type,
    )
    # The parent starts its kill timer only now: on a loaded machine starting Python and
    # opening the store can outlast the whole delay, and a kill before the open proves
    # nothing about recovery.
    sys.stdout.write("open\n")
    sys.stdout.flush()
    lock = threading.Lock()

    def write(queue_id: int) -> None:
        seed = 0
        while True:
            seed += 1
            body = body_for(queue_id, seed)
            result = store.put(
                "Crash", body, queue_id=queue_id, tags=f"t{seed % 3}", keys=[f"k{seed}"]
            )
            with lock:
                sys.stdout.write(f"{queue_id} {result.queue_offset} {seed}\n")
                sys.stdout.flush()

    workers = [threading.Thread(target=write, args=(q,), daemon=True) for q in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
