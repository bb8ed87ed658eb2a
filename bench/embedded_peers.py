"""The embedded stores a Python user could pick instead of rmq, written and read the way
their documentation suggests (see ``bench/embedded.py`` for the rmq side):

- ``rocksdb`` (rocksdict, raw mode): ``m<offset>`` -> tags, key, body and ``k<key>`` ->
  offset; ``WriteBatch`` for batches; WAL on, not synced (like async flush).
- ``lmdb``: two databases (messages by offset, offsets by key); one write transaction per
  put or per batch (``putmulti``); ``sync=False`` (no fsync at commit, like async flush).
- ``sqlite``: WAL mode, ``synchronous=NORMAL`` (no fsync at commit); a table with an
  integer primary key and an index on the key; ``executemany`` in one transaction per batch.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

from bench.harness import NotMeasurable
from bench.workload import Workload

_OFF = struct.Struct(">Q")


def _values(wl: Workload) -> Callable[[int], bytes]:
    """Message i's value for a key-value store: the body itself when there is nothing
    else to store, otherwise tag, key and body joined."""
    if wl.plain:
        return wl.ordered.__getitem__

    def joined(i: int) -> bytes:
        return b"".join((wl.tag(i).encode(), b"\0", wl.keys[i].encode(), b"\0", wl.ordered[i]))

    return joined


# --------------------------------------------------------------------------- rocksdb


class RocksSystem:
    def __init__(self, path: Path, wl: Workload) -> None:
        try:
            from rocksdict import Options, Rdict, WriteBatch
        except ImportError as exc:
            raise NotMeasurable(f"rocksdict is not installed ({exc})") from exc
        self._batch_cls = WriteBatch
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.set_write_buffer_size(64 << 20)
        opts.increase_parallelism(2)
        self.db = Rdict(str(path / "rocks"), opts)

    def write(self, wl: Workload, batch: int) -> None:
        db = self.db
        pack = _OFF.pack
        plain = wl.plain
        value_of = _values(wl)
        if batch <= 1:
            for i in range(wl.count):
                off = pack(i)
                db.put(b"m" + off, value_of(i))
                if not plain:
                    db.put(b"k" + wl.keys[i].encode(), off)
            return
        wb_cls = self._batch_cls
        for start in range(0, wl.count, batch):
            wb = wb_cls(raw_mode=True)
            for i in range(start, min(wl.count, start + batch)):
                off = pack(i)
                wb.put(b"m" + off, value_of(i))
                if not plain:
                    wb.put(b"k" + wl.keys[i].encode(), off)
            db.write(wb)

    def read_all(self, wl: Workload) -> int:
        seen = 0
        n = 0
        for k, v in self.db.items(from_key=b"m"):
            if not (isinstance(k, bytes) and k.startswith(b"m")):
                break
            seen += len(v)
            n += 1
        if n != wl.count:
            raise RuntimeError(f"rocksdb returned {n} messages, expected {wl.count}")
        return seen

    def read_all_zero_copy(self, wl: Workload) -> int:
        # rocksdict hands values out only as bytes: the same read as read_all.
        return self.read_all(wl)

    def lookup(self, wl: Workload, keys: list[str]) -> int:
        db = self.db
        found = 0
        for k in keys:
            off = db.get(b"k" + k.encode())
            if off is not None and db.get(b"m" + off) is not None:
                found += 1
        return found

    def close(self) -> None:
        self.db.close()


# --------------------------------------------------------------------------- lmdb


class LmdbSystem:
    def __init__(self, path: Path, wl: Workload) -> None:
        try:
            import lmdb
        except ImportError as exc:
            raise NotMeasurable(f"lmdb is not installed ({exc})") from exc
        map_size = max(1 << 26, 4 * wl.count * (wl.body_size + 96))
        self.env = lmdb.open(
            str(path / "lmdb"),
            map_size=map_size,
            max_dbs=2,
            sync=False,
            metasync=False,
            writemap=True,
            map_async=True,
        )
        self.msgs = self.env.open_db(b"m", integerkey=False)
        self.keys = self.env.open_db(b"k")

    def write(self, wl: Workload, batch: int) -> None:
        env = self.env
        pack = _OFF.pack
        msgs, keys = self.msgs, self.keys
        plain = wl.plain
        value_of = _values(wl)
        if batch <= 1:
            for i in range(wl.count):
                off = pack(i)
                with env.begin(write=True) as txn:
                    txn.put(off, value_of(i), db=msgs, append=True)
                    if not plain:
                        txn.put(wl.keys[i].encode(), off, db=keys)
            return
        for start in range(0, wl.count, batch):
            end = min(wl.count, start + batch)
            with env.begin(write=True) as txn:
                txn.cursor(db=msgs).putmulti(
                    [(pack(i), value_of(i)) for i in range(start, end)], append=True
                )
                if not plain:
                    txn.cursor(db=keys).putmulti(
                        [(wl.keys[i].encode(), pack(i)) for i in range(start, end)]
                    )

    def read_all(self, wl: Workload) -> int:
        return self._scan(wl, buffers=False)

    def read_all_zero_copy(self, wl: Workload) -> int:
        # buffers=True: each value is a view of the map, valid until the transaction ends.
        return self._scan(wl, buffers=True)

    def _scan(self, wl: Workload, *, buffers: bool) -> int:
        seen = 0
        n = 0
        with self.env.begin(db=self.msgs, buffers=buffers) as txn:
            for _k, v in txn.cursor():
                seen += len(v)
                n += 1
        if n != wl.count:
            raise RuntimeError(f"lmdb returned {n} messages, expected {wl.count}")
        return seen

    def lookup(self, wl: Workload, keys: list[str]) -> int:
        found = 0
        with self.env.begin() as txn:
            for k in keys:
                off = txn.get(k.encode(), db=self.keys)
                if off is not None and txn.get(off, db=self.msgs) is not None:
                    found += 1
        return found

    def close(self) -> None:
        self.env.close()


# --------------------------------------------------------------------------- sqlite


class SqliteSystem:
    def __init__(self, path: Path, wl: Workload) -> None:
        import sqlite3

        self.db = sqlite3.connect(str(path / "sqlite.db"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE msg (off INTEGER PRIMARY KEY, tags TEXT, key TEXT, body BLOB)"
        )
        self.db.execute("CREATE INDEX msg_key ON msg(key)")
        self.read_batch = 32

    def write(self, wl: Workload, batch: int) -> None:
        db = self.db
        sql = "INSERT INTO msg VALUES (?, ?, ?, ?)"
        plain = wl.plain
        bodies = wl.ordered
        if batch <= 1:
            for i in range(wl.count):
                if plain:
                    db.execute(sql, (i, None, None, bodies[i]))
                else:
                    db.execute(sql, (i, wl.tag(i), wl.keys[i], bodies[i]))
            return
        for start in range(0, wl.count, batch):
            end = min(wl.count, start + batch)
            db.execute("BEGIN")
            if plain:
                db.executemany(sql, [(i, None, None, bodies[i]) for i in range(start, end)])
            else:
                db.executemany(
                    sql, [(i, wl.tag(i), wl.keys[i], bodies[i]) for i in range(start, end)]
                )
            db.execute("COMMIT")

    def read_all(self, wl: Workload) -> int:
        cur = self.db.execute("SELECT tags, key, body FROM msg ORDER BY off")
        seen = 0
        n = 0
        while True:
            rows = cur.fetchmany(self.read_batch)
            if not rows:
                break
            for row in rows:
                seen += len(row[2])
            n += len(rows)
        if n != wl.count:
            raise RuntimeError(f"sqlite returned {n} messages, expected {wl.count}")
        return seen

    def read_all_zero_copy(self, wl: Workload) -> int:
        # sqlite3 hands blobs out only as bytes (Blob objects read by copying too): the
        # same read as read_all.
        return self.read_all(wl)

    def lookup(self, wl: Workload, keys: list[str]) -> int:
        found = 0
        ex = self.db.execute
        sql = "SELECT off, tags, body FROM msg WHERE key = ?"
        for k in keys:
            found += ex(sql, (k,)).fetchone() is not None
        return found

    def close(self) -> None:
        self.db.close()
