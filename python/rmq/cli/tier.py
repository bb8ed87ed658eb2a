"""``rmq tier status DIR`` and ``rmq tier upload DIR``: a store's object-storage tier.

DIR is a store directory or a broker data directory (each ``shard-N`` in turn), as for
``rmq inspect``. ``status`` opens each store read-only (no lock: safe beside a running
broker, whose shard processes publish their uploader's state in ``DIR/tier-status/``);
``upload`` opens each store for writing, so the broker must be stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rmq.cli.inspect import store_directories, store_directory_path
from rmq.cli.tier_report import (
    STATES,
    describe_tier,
    human_bytes,
    state_line,
    uploader_line,
)
from rmq.cluster.tier import brief, shard_options

POLL_SECONDS = 0.1
TIER_FLAGS = ("tier_url", "tier_endpoint", "tier_region")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tier",
        help="the object-storage tier of a store: status, upload now",
        description="Look at or drive the object-storage tier of the store directory DIR "
        "(or of every shard-N under a broker data directory). Credentials come from the "
        "AWS_* environment variables, as for `rmq serve`.",
    )
    commands = parser.add_subparsers(dest="tier_command", metavar="COMMAND", required=True)

    status = commands.add_parser(
        "status",
        help="what is local, uploaded, pending, evicted and failing, read-only",
        description="Show, per store and in total, the commit-log segments that are only "
        "local (active: being written; pending: sealed, waiting for upload), both local "
        "and in the tier (uploaded), and only in the tier (evicted), with their sizes; and "
        "whether uploads fail, and why. Opens each store read-only and takes no lock, so "
        "it runs beside a running broker; the uploader's state then comes from the shard "
        "process serving the store. Exits 0 when all is well, 1 when uploads are failing "
        "or a store cannot be opened, 2 when DIR is no directory.",
    )
    status.add_argument("path", type=store_directory_path, metavar="DIR")
    status.add_argument("--json", action="store_true", help="print one JSON document")
    status.add_argument("--segments", action="store_true", help="list every segment too")
    status.set_defaults(func=run_status)

    upload = commands.add_parser(
        "upload",
        help="upload every sealed segment now, with progress (store not running)",
        description="Open each store (it must not be in use: stop the broker first) and "
        "upload every sealed segment that is not in the tier yet, showing progress. "
        "With --tier-url a store without a tier gets one (a broker data directory's "
        "shard N under URL/shard-N, as `rmq serve --tier-url` does). Exits 0 when "
        "everything sealed is uploaded, 1 when an upload or a store failed.",
    )
    upload.add_argument("path", type=store_directory_path, metavar="DIR")
    upload.add_argument("--tier-url", metavar="s3://BUCKET/PREFIX", help="give the store a tier")
    upload.add_argument("--tier-endpoint", metavar="URL", help="the S3-compatible server")
    upload.add_argument("--tier-region", metavar="REGION", help="the bucket's region")
    upload.add_argument("--no-progress", action="store_true", help="no progress bar")
    upload.set_defaults(func=run_upload)


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {brief(str(error))}"


# ---- status -------------------------------------------------------------------------


def store_report(root: Path) -> dict[str, Any]:
    """One store's tier report (``tier`` None without one; ``error`` when it cannot be
    opened)."""
    import rmq

    report: dict[str, Any] = {"path": str(root)}
    try:
        with rmq.Store(root, read_only=True) as store:
            status = store.tier_status()
    except Exception as error:
        report["error"] = _error_text(error)
        return report
    report["tier"] = describe_tier(root, status)
    return report


def totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    tiers = [r["tier"] for r in reports if r.get("tier")]
    answer: dict[str, Any] = {
        "stores": len(reports),
        "stores_with_tier": len(tiers),
        "failing": sum(1 for t in tiers if t["uploader"]["failing"]),
        "states": {},
    }
    for state in STATES:
        answer["states"][state] = {
            key: sum(t["states"][state][key] for t in tiers) for key in ("segments", "bytes")
        }
    for part in ("local", "in_tier"):
        answer[part] = {key: sum(t[part][key] for t in tiers) for key in ("segments", "bytes")}
    return answer


def _print_store(report: dict[str, Any], segments: bool) -> None:
    if "error" in report:
        print(f"== {report['path']}: cannot open: {report['error']}")
        return
    tier = report["tier"]
    if tier is None:
        print(f"== {report['path']}: no tier")
        return
    print(f"== {report['path']}: {tier['url']}")
    for state, meaning in STATES.items():
        counts = tier["states"][state]
        print(
            f"  {state:<9} {counts['segments']:>5} segment(s) {human_bytes(counts['bytes']):>11}"
            f"  {meaning}"
        )
    _print_split(tier)
    queues = tier.get("consume_queue_files")
    if queues and any(counts["segments"] for counts in queues.values()):
        # Queue files follow their segments (format §7.5): counted apart, not as segments.
        print(
            "  consume-queue files in the tier: "
            + ", ".join(
                f"{counts['segments']} {state} ({human_bytes(counts['bytes'])})"
                for state, counts in queues.items()
            )
        )
    info = tier["uploader"]
    print(f"  {uploader_line(info)}")
    if info["in_progress"]:
        part = info["in_progress"]
        print(f"  uploading segment {part['start_offset']:020d} ({human_bytes(part['size'])})")
    if segments:
        for segment in tier["segments"]:
            print(
                f"    {segment['start_offset']:020d} {human_bytes(segment['size']):>11}  "
                f"{segment['state']}"
            )


def _print_split(summary: dict[str, Any]) -> None:
    local, remote = summary["local"], summary["in_tier"]
    print(
        f"  local: {local['segments']} segment(s), {human_bytes(local['bytes'])}; "
        f"in the tier: {remote['segments']} segment(s), {human_bytes(remote['bytes'])}"
    )


def run_status(args: argparse.Namespace) -> int:
    reports = [store_report(root) for root in store_directories(args.path)]
    total = totals(reports)
    if args.json:
        print(json.dumps({"stores": reports, "totals": total}, indent=2))
    else:
        for report in reports:
            _print_store(report, args.segments)
        if len(reports) > 1:
            print(
                f"== total: {total['stores_with_tier']} of {total['stores']} store(s) with a "
                f"tier, {total['failing']} failing"
            )
            print(f"  {state_line(total['states'])}")
            _print_split(total)
        elif total["stores_with_tier"] == 0 and "error" not in reports[0]:
            print("(this store has no tier: `rmq serve --tier-url` gives it one)")
    bad = total["failing"] or any("error" in r for r in reports)
    return 1 if bad else 0


# ---- upload -------------------------------------------------------------------------


def _open_for_upload(root: Path, shard: int | None, args: argparse.Namespace) -> Any:
    import rmq

    options = {name: getattr(args, name) for name in TIER_FLAGS if getattr(args, name)}
    if options and "tier_url" not in options:
        raise ValueError("--tier-endpoint and --tier-region only apply with --tier-url")
    if shard is not None:
        options = shard_options(options, shard)
    return rmq.Store(root, **options)


def _upload_store(store: Any, name: str, progress: bool) -> tuple[int, int, float]:
    """Upload every sealed segment of ``store``, showing progress; (segments, bytes,
    seconds). Raises what ``upload_to_tier`` raised."""
    status = store.tier_status()
    waiting = {s["start_offset"]: s["size"] for s in status["segments"] if s["state"] == "pending"}
    if not waiting:
        print(f"{name}: nothing to upload", file=sys.stderr)
        return 0, 0, 0.0
    failure: list[BaseException] = []

    def work() -> None:
        try:
            store.upload_to_tier()
        except BaseException as error:  # reported by the main thread
            failure.append(error)

    bar = tqdm(
        total=sum(waiting.values()),
        desc=name,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        disable=not progress,
        file=sys.stderr,
    )
    started = time.monotonic()
    worker = threading.Thread(target=work, name="tier-upload", daemon=True)
    worker.start()

    def update() -> tuple[int, int]:
        status = store.tier_status()
        done = [
            s
            for s in status["segments"]
            if s["start_offset"] in waiting and s["state"] != "pending"
        ]
        done_bytes = sum(waiting[s["start_offset"]] for s in done)
        bar.update(done_bytes - bar.n)
        current = status["upload"]["in_progress"]
        postfix = f"{len(done)}/{len(waiting)} segments"
        if current:
            postfix += f", segment {current[0]} ({human_bytes(current[1])})"
        bar.set_postfix_str(postfix, refresh=False)
        return len(done), done_bytes

    try:
        while worker.is_alive():
            worker.join(POLL_SECONDS)
            update()
        segments, done_bytes = update()
    except KeyboardInterrupt:
        bar.close()
        # The engine trusts an object only once confirmed and finds each segment's state
        # again at the next open, so leaving now loses nothing.
        print(f"rmq tier upload: interrupted ({name})", file=sys.stderr, flush=True)
        os._exit(130)
    finally:
        bar.close()
    if failure:
        raise failure[0]
    return segments, done_bytes, time.monotonic() - started


def run_upload(args: argparse.Namespace) -> int:
    from rmq.errors import StoreLockedError

    roots = store_directories(args.path)
    broker = roots != [args.path]
    worst = 0
    for root in roots:
        shard = int(root.name[6:]) if broker else None
        try:
            store = _open_for_upload(root, shard, args)
        except ValueError as error:
            print(f"rmq tier upload: {error}", file=sys.stderr)
            return 2
        except StoreLockedError:
            print(
                f"rmq tier upload: {root} is in use (is the broker running? stop it first; "
                "it uploads by itself, and `rmq tier status` runs beside it)",
                file=sys.stderr,
            )
            worst = 1
            continue
        except Exception as error:
            print(f"rmq tier upload: {root}: {_error_text(error)}", file=sys.stderr)
            worst = 1
            continue
        with store:
            if store.tier_status() is None:
                print(
                    f"rmq tier upload: {root} has no tier (give it one with --tier-url)",
                    file=sys.stderr,
                )
                worst = 1
                continue
            try:
                segments, count, seconds = _upload_store(store, root.name, not args.no_progress)
            except Exception as error:
                print(f"rmq tier upload: {root}: {_error_text(error)}", file=sys.stderr)
                worst = 1
                continue
        if segments:
            rate = count / max(seconds, 1e-9)
            print(
                f"{root}: uploaded {segments} segment(s), {human_bytes(count)} in "
                f"{seconds:.2f} s ({human_bytes(int(rate))}/s)"
            )
    return worst
