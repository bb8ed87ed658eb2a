"""What one ranged GET costs an S3 server in CPU: the server process's user + system time
(from /proc) over many GETs of one length, divided by their count. Client CPU and the
machine's other load do not enter it, so it is steady on a busy machine, unlike a
wall-clock rate. Used by ``bench tier`` to compare the servers it can run against.

    python -m bench.s3_get_cost [--io-buffer-size N]   # one server, a table on stdout
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

LENGTHS = (64 << 10, 1 << 20, 4 << 20)  # a block, a typical run of blocks, a large run
OBJECT_BYTES = 16 << 20
BUCKET = "get-cost"
KEY = "object"


def get_cost(server: Any, lengths: tuple[int, ...] = LENGTHS, gets: int = 200) -> dict[str, float]:
    """Server CPU microseconds per ranged GET of each of ``lengths`` (keys ``get_<KiB>k_us``),
    ``gets`` GETs at spread offsets of a 16 MiB object, one at a time from one client."""
    import urllib3

    client = server.client(request_checksum_calculation="when_required", signature_version="s3v4")
    client.create_bucket(Bucket=BUCKET)
    client.put_object(Bucket=BUCKET, Key=KEY, Body=os.urandom(OBJECT_BYTES))
    # Presigned URLs, fetched with one pooled urllib3 connection: the client's own cost
    # stays small, so the server is not starved of the machine's cores while it is timed.
    pool = urllib3.PoolManager(maxsize=1)
    url = client.generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": KEY}, ExpiresIn=3600
    )
    out: dict[str, float] = {}
    for length in lengths:
        starts = [(i * 7919 * 4096) % (OBJECT_BYTES - length) for i in range(gets)]
        fetch(pool, url, starts[0], length)  # warm the connection and the page cache
        cpu0, t0 = server.cpu_seconds(), time.perf_counter()
        for start in starts:
            fetch(pool, url, start, length)
        cpu, wall = server.cpu_seconds() - cpu0, time.perf_counter() - t0
        out[f"get_{length >> 10}k_us"] = cpu / gets * 1e6
        out[f"get_{length >> 10}k_wall_us"] = wall / gets * 1e6
    client.delete_object(Bucket=BUCKET, Key=KEY)
    client.delete_bucket(Bucket=BUCKET)
    return out


def fetch(pool: Any, url: str, start: int, length: int) -> None:
    response = pool.request(
        "GET", url, headers={"Range": f"bytes={start}-{start + length - 1}"}, preload_content=True
    )
    if response.status != 206 or len(response.data) != length:
        raise RuntimeError(f"GET {start}+{length}: {response.status}, {response.data[:300]!r}")


def main() -> None:
    from bench.peers.s3 import IO_BUFFER_SIZE, S3Server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--io-buffer-size",
        type=int,
        default=IO_BUFFER_SIZE,
        help="versitygw posix --io-buffer-size (0: its default, 1 MiB)",
    )
    parser.add_argument("--gets", type=int, default=200)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        S3Server(Path(tmp), io_buffer_size=args.io_buffer_size) as server,
    ):
        for name, value in get_cost(server, gets=args.gets).items():
            print(f"{name:>20} {value:10.1f}")


if __name__ == "__main__":
    main()
