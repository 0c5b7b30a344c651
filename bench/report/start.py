"""The daemon's start against Playwright's launch, its timeline, and the memory it holds."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .. import targets
from ..targets import COLD_BASE, COLD_MCP, COLD_MCP_BASE, TARGETS
from .figures import mark, med, plt, spread


def cold_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    base = med(next(r for r in rows if r["tool"] == COLD_BASE)["ms"])
    lines = [
        f"## {targets.COLD}",
        "",
        "From starting the process to the first answered command (ours: `nostr-browserd run`",
        "to a `get_url` answered on the local channel; Playwright: a Python process that",
        "launches the browser and opens a page; playwright-mcp: the server to an answered",
        "`browser_navigate`; ours mcp --local: `nostr-browserd mcp --local` to an answered",
        "`open` of the same page, as an MCP host starts it once per session; agent-browser:",
        "`open` with no daemon running).",
        "",
        "| tool | ms (min–max) | × Playwright |",
        "| --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['tool']} | {med(r['ms']):,.0f} ({spread(r['ms'])}) | "
            f"{med(r['ms']) / base:.2f}× |"
        )
    tools = {r["tool"]: med(r["ms"]) for r in rows}
    ours = tools["ours"] / base
    ok = TARGETS["cold"].met(ours)
    lines += [
        "",
        f"Target: ours ≤ {TARGETS['cold'].bound}× Playwright's launch and first page: "
        f"{ours:.2f}× {mark(ok)}.",
    ]
    if COLD_MCP in tools and COLD_MCP_BASE in tools:
        mcp = tools[COLD_MCP] / tools[COLD_MCP_BASE]
        lines.append(
            f"Target: ours mcp --local ≤ {TARGETS['cold_mcp'].bound}× playwright-mcp's first"
            f" call: {mcp:.2f}× {mark(TARGETS['cold_mcp'].met(mcp))}."
        )
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ys = [med(r["ms"]) for r in rows]
    err = [
        [y - min(r["ms"]) for y, r in zip(ys, rows, strict=True)],
        [max(r["ms"]) - y for y, r in zip(ys, rows, strict=True)],
    ]
    ax.bar([r["tool"] for r in rows], ys, yerr=err, capsize=3, color="tab:gray")
    ax.set_ylabel("ms to the first answer")
    fig.tight_layout()
    fig.savefig(out / "cold_start.png", dpi=110)
    plt.close(fig)
    return [*lines, "", "![cold start](cold_start.png)", ""]


def cold_timeline_section(timelines: list[dict[str, list[float]]]) -> list[str]:
    """The daemon's own start, as it logs it: each step's span, median over the runs."""
    if not timelines:
        return []
    steps = list(dict.fromkeys(step for spans in timelines for step in spans))
    lines = [
        "Where our cold start goes: the daemon's own timeline (its `started in` log line),",
        "seconds since the process started, median over the runs; Playwright's driver starts",
        "before the config is read, Chromium launches on it while the daemon imports, the store,",
        "the login and the local channel open beside the launch, and the relays once the browser",
        "is up and the local owner's first window made:",
        "",
        "| step | began | ended | took |",
        "| --- | ---: | ---: | ---: |",
    ]
    for step in steps:
        spans = [t[step] for t in timelines if step in t]
        began, ended = med([b for b, _ in spans]), med([e for _, e in spans])
        took = med([e - b for b, e in spans])
        lines.append(f"| {step} | {began:.2f} | {ended:.2f} | {took:.2f} |")
    return [*lines, ""]


def memory_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        series[r["tool"]].append((r["contexts"], r["pss_mb"]))
    slopes = {}
    for tool, points in series.items():
        (n0, m0), (n1, m1) = points[0], points[-1]
        slopes[tool] = (m1 - m0) / (n1 - n0)
    base = slopes.get("Playwright raw") or 1
    lines = [
        "## Memory",
        "",
        "PSS of the browser's processes (MB) with N contexts, each with one tab on",
        "tutorial/controlflow (ours: one controller each, through the tool layer).",
        "",
        "| tool | "
        + " | ".join(f"{n} contexts" for n, _ in next(iter(series.values())))
        + " | per extra context | × raw |",
        "| --- |" + " ---: |" * (len(next(iter(series.values()))) + 2),
    ]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for tool, points in series.items():
        cells = " | ".join(f"{m:,.0f}" for _, m in points)
        lines.append(f"| {tool} | {cells} | {slopes[tool]:,.1f} MB | {slopes[tool] / base:.2f}× |")
        ax.plot([n for n, _ in points], [m for _, m in points], marker="o", label=tool)
    ax.set_xlabel("contexts (controllers)")
    ax.set_ylabel("PSS, MB")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=110)
    plt.close(fig)
    return [*lines, "", "![memory](memory.png)", ""]
