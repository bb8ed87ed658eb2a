"""Give every timed write the same kind of memory to start from.

On this kind of virtual machine, memory the guest freed a few seconds ago has been
handed back to the host (free page reporting); the first touch of such a page costs a
trip to the hypervisor. Measured here: a plain copy into a fresh mapped file runs at about
0.3 GB/s on returned pages and at about 2 GB/s on pages freed just before. Which of the two
a system gets depends only on what ran before it, so a comparison between systems would
mostly compare their luck.

``preheat`` writes ``nbytes`` through a mapped scratch file and deletes it right before a
timed run: the run then starts on pages the guest has just used, whichever system it is.
Nothing here is timed.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

_PIECE = 1 << 20


def preheat(workdir: Path, nbytes: int) -> None:
    """Touch ``nbytes`` of page cache through a mapping, then free it."""
    if nbytes <= 0:
        return
    size = (nbytes + _PIECE - 1) // _PIECE * _PIECE
    path = workdir / "preheat.scratch"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as mapping:
            zeros = bytes(_PIECE)
            for position in range(0, size, _PIECE):
                mapping[position : position + _PIECE] = zeros
    finally:
        os.close(fd)
        path.unlink()
