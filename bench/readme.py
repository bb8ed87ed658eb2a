"""Rewrites the results section of bench/README.md from bench/results/*.json."""

from __future__ import annotations

import json
from pathlib import Path

from bench.basics import BENCH_DIR

START = "<!-- results:start (written by python -m bench; do not edit by hand) -->"
END = "<!-- results:end -->"


def section(results_dir: Path, names: list[str]) -> str:
    """The results of the benchmarks ``names``, in that order, between the markers."""
    parts = [START, ""]
    for name in names:
        path = results_dir / f"{name}.json"
        if not path.exists():
            parts.append(f"### `{name}`\n\nNot run yet.\n")
            continue
        result = json.loads(path.read_text())
        parts.append(result.get("table_markdown", "").rstrip())
        parts.append("")
        parts.append(f"Command: `{result.get('command', '')}`")
        parts.append("")
        if (results_dir / f"{name}.png").exists():
            rel = (results_dir / f"{name}.png").relative_to(BENCH_DIR)
            parts.append(f"![{name}]({rel.as_posix()})")
            parts.append("")
    parts.append(END)
    return "\n".join(parts)


def update(results_dir: Path, names: list[str]) -> None:
    """Rewrite README.md's results section with the results of ``names``."""
    readme = BENCH_DIR / "README.md"
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip() + f"\n\n## Latest results\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + section(results_dir, names) + tail)
