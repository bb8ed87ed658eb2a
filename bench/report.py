"""A finished run as results: medians and ratios (``summarize``), the markdown table, the
plot, and the files under the results directory."""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from pathlib import Path
from typing import Any

from bench.basics import median
from bench.machine import machine_description, versions
from bench.model import Benchmark, Context, Metrics


def summarize(
    bench: Benchmark,
    ctx: Context,
    rounds: list[dict[str, Any]],
    unavailable: list[dict[str, str]],
    errors: list[dict[str, Any]],
    started: float,
) -> dict[str, Any]:
    medians: dict[str, dict[str, Metrics]] = {}
    spread: dict[str, dict[str, float]] = {}
    noisy: list[dict[str, Any]] = []
    for case in bench.cases:
        medians[case.label] = {}
        spread[case.label] = {}
        for system in bench.systems:
            mine = [r for r in rounds if r["case"] == case.label and r["system"] == system.name]
            if not mine:
                continue
            keys = sorted({k for r in mine for k in r["metrics"]})
            medians[case.label][system.name] = {
                k: median([r["metrics"][k] for r in mine if k in r["metrics"]]) for k in keys
            }
            values = [r["metrics"].get(bench.primary, float("nan")) for r in mine]
            mid = median(values)
            if len(values) > 1 and mid:
                spread[case.label][system.name] = (max(values) - min(values)) / mid
                for r, v in zip(mine, values, strict=True):
                    dev = abs(v - mid) / mid
                    if dev > 0.2:
                        noisy.append(
                            {
                                "round": r["round"],
                                "case": case.label,
                                "system": system.name,
                                "deviation_from_median": round(dev, 3),
                                "loadavg": r["metrics"].get("loadavg"),
                            }
                        )

    rmq_names = [s.name for s in bench.systems if s.role == "rmq"]
    ratios: dict[str, dict[str, dict[str, float]]] = {}
    for label, by_system in medians.items():
        ratios[label] = {}
        for rname in rmq_names:
            if rname not in by_system or bench.primary not in by_system[rname]:
                continue
            value = by_system[rname][bench.primary]
            for other, m in by_system.items():
                if other == rname or bench.primary not in m or not m[bench.primary]:
                    continue
                ratios[label].setdefault(rname, {})[other] = value / m[bench.primary]

    measured = {r["system"] for r in rounds}
    rmq_measured = any(n in measured for n in rmq_names)
    status = "ok"
    if not rmq_measured:
        status = "not measurable yet"
    elif unavailable or errors:
        status = "partial"
    return {
        "benchmark": bench.name,
        "title": bench.title,
        "description": bench.description,
        "status": status,
        "command": ctx.command,
        "size": ctx.size,
        "rounds_requested": ctx.rounds,
        "started": _dt.datetime.fromtimestamp(started, _dt.UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 2),
        "machine": machine_description(ctx.work_dir),
        "loadavg_at_end": os.getloadavg()[0],
        "versions": versions(),
        "parameters": bench.parameters,
        "cases": [{"label": c.label, "params": c.params} for c in bench.cases],
        "systems": [{"name": s.name, "role": s.role, "note": s.note} for s in bench.systems],
        "primary_metric": bench.primary,
        "higher_is_better": bench.higher_is_better,
        "ratio_definition": f"rmq median {bench.primary} / other system's median {bench.primary}",
        "rounds": rounds,
        "medians": medians,
        "spread": spread,
        "noisy_rounds": noisy,
        "ratios": ratios,
        "unavailable": unavailable,
        "errors": errors,
    }


def _fmt(value: float | None) -> str:
    if value is None or value != value:  # NaN
        return "-"
    a = abs(value)
    if a >= 100_000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:,.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 0.01:
        return f"{value:.2f}"
    return f"{value:.3g}"


def markdown_table(bench: Benchmark, result: dict[str, Any]) -> str:
    lines: list[str] = []
    direction = "higher is better" if bench.higher_is_better else "lower is better"
    cols = bench.columns or {bench.primary: bench.primary}
    rmq_names = [s["name"] for s in result["systems"] if s["role"] == "rmq"]
    lines.append(f"### `{bench.name}`: {bench.title}")
    lines.append("")
    lines.append(
        f"Size `{result['size']}`, {result['rounds_requested']} rounds, "
        f"{result['started']}, {result['machine']['cores']} cores "
        f"({result['machine']['cpu'] or 'unknown cpu'}), "
        f"load {result['machine']['loadavg_at_start']:.1f} → {result['loadavg_at_end']:.1f}. "
        f"Medians; ratio = rmq ÷ system on {cols.get(bench.primary, bench.primary)} "
        f"({direction}); spread = (max - min) / median over rounds."
    )
    lines.append("")
    if result["rounds"]:
        header = ["case", "system", *cols.values()]
        header += [f"{r} ÷ this" for r in rmq_names] + ["spread", "rounds"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for case in result["cases"]:
            label = case["label"]
            for system in result["systems"]:
                name = system["name"]
                m = result["medians"].get(label, {}).get(name)
                if m is None:
                    continue
                n = sum(1 for r in result["rounds"] if r["case"] == label and r["system"] == name)
                row = [label, f"**{name}**" if system["role"] == "rmq" else name]
                row += [_fmt(m.get(k)) for k in cols]
                for rname in rmq_names:
                    ratio = result["ratios"].get(label, {}).get(rname, {}).get(name)
                    row.append(f"{ratio:.3g}x" if ratio is not None else "")
                s = result["spread"].get(label, {}).get(name)
                row.append(f"{s:.0%}" if s is not None else "")
                row.append(str(n))
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    for item in result["unavailable"]:
        word = "not measurable yet" if item["system"] in rmq_names else "not run"
        where = f" [{item['case']}]" if item.get("case") else ""
        lines.append(f"- {item['system']}{where}: {word}: {item['reason']}")
    for err in result["errors"]:
        first = err["error"].splitlines()[0]
        lines.append(f"- {err['system']} [{err['case']}] round {err['round']}: error: {first}")
    if result["noisy_rounds"]:
        worst = sorted(result["noisy_rounds"], key=lambda n: -n["deviation_from_median"])[:5]
        parts = [
            f"{n['system']} [{n['case']}] round {n['round']} ({n['deviation_from_median']:.0%})"
            for n in worst
        ]
        lines.append(
            f"- noisy rounds (> 20% from the median): {len(result['noisy_rounds'])}; "
            f"worst: {', '.join(parts)}"
        )
    notes = [s for s in result["systems"] if s["note"]]
    if notes:
        lines.append("")
        for s in notes:
            lines.append(f"- *{s['name']}*: {s['note']}")
    lines.append("")
    return "\n".join(lines)


def plot(bench: Benchmark, result: dict[str, Any], path: Path) -> bool:
    """A grouped bar chart of the primary metric per case and system (min-max whiskers)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        print(f"   no plot: matplotlib unavailable ({exc})", flush=True)
        return False
    labels = [c["label"] for c in result["cases"]]
    systems = [
        s["name"]
        for s in result["systems"]
        if any(s["name"] in result["medians"].get(lbl, {}) for lbl in labels)
    ]
    fig, ax = plt.subplots(figsize=(max(7.5, 1.6 * len(labels) + 3.5), 4.2), dpi=110)
    if not systems:
        ax.text(0.5, 0.5, "not measurable yet", ha="center", va="center", fontsize=14)
        ax.set_axis_off()
    else:
        width = 0.8 / len(systems)
        values_all: list[float] = []
        for i, name in enumerate(systems):
            mids, lo, hi = [], [], []
            for lbl in labels:
                vals = [
                    r["metrics"][bench.primary]
                    for r in result["rounds"]
                    if r["case"] == lbl and r["system"] == name and bench.primary in r["metrics"]
                ]
                m = median(vals) if vals else 0.0
                mids.append(m)
                lo.append(m - min(vals) if vals else 0.0)
                hi.append(max(vals) - m if vals else 0.0)
                values_all += [v for v in vals if v > 0]
            xs = [x + (i - (len(systems) - 1) / 2) * width for x in range(len(labels))]
            ax.bar(xs, mids, width, yerr=[lo, hi], capsize=2, label=name)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=15 if len(labels) > 4 else 0, fontsize=8)
        if values_all and max(values_all) / max(min(values_all), 1e-12) > 200:
            ax.set_yscale("log")
        col = bench.columns.get(bench.primary, bench.primary)
        direction = "higher is better" if bench.higher_is_better else "lower is better"
        ax.set_ylabel(f"{col} ({direction})")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{bench.name}: {bench.title} (size {result['size']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write_results(bench: Benchmark, ctx: Context, result: dict[str, Any]) -> None:
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    table = markdown_table(bench, result)
    result["table_markdown"] = table
    json_path = ctx.results_dir / f"{bench.name}.json"
    json_path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    (ctx.results_dir / f"{bench.name}.md").write_text(table)
    plot(bench, result, ctx.results_dir / f"{bench.name}.png")
    print(table, flush=True)
