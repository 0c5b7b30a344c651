"""The browser work against Playwright: snapshots, navigation, and where an `open` goes."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from .. import browser_bench, targets
from ..targets import NAV_BASE, SNAPSHOT_BASE, TARGETS, open_margins
from .figures import mark, med, pages_of, plt, spread


def snapshot_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    by = {(r["page"], r["tool"]): r for r in rows}
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    lines = [
        f"## {targets.SNAPSHOTS}",
        "",
        "Characters / refs / milliseconds (median, min–max), and the ratio of the time to",
        f'{SNAPSHOT_BASE}\'s `aria_snapshot(mode="ai")` on the same page in the same run. Ours is',
        "measured through the protocol layer (what every transport runs) without the result cap;",
        "the default cap (20,000 characters) would page it with `--start` (see the README).",
        "",
        "| page | tool | characters | refs | ms (min–max) | time × raw | size × raw |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    verdicts = []
    for page in pages_of(rows):
        base = by[(page, SNAPSHOT_BASE)]
        base_ms, base_chars = med(base["ms"]), med(base["chars"])
        for tool in tools:
            r = by.get((page, tool))
            if r is None:
                continue
            ratio = med(r["ms"]) / base_ms
            note = ""
            if tool == "ours":
                ok = TARGETS["snapshot"].met(ratio)
                note = f" {mark(ok)}"
                verdicts.append(ok)
            lines.append(
                f"| {page} | {tool} | {med(r['chars']):,.0f} | {med(r['refs']):,.0f} | "
                f"{med(r['ms']):,.0f} ({spread(r['ms'])}) | {ratio:.2f}×{note} | "
                f"{med(r['chars']) / base_chars:.2f}× |"
            )
    lines += [
        "",
        f"Target: ours ≤ {TARGETS['snapshot'].bound}× raw on every page: "
        f"{sum(verdicts)} of {len(verdicts)} pages met.",
        "",
        "![snapshot size](snapshot_size.png)",
        "![snapshot time](snapshot_time.png)",
        "",
    ]
    grouped_bars(
        rows, tools, "chars", "characters (log scale)", out / "snapshot_size.png", log=True
    )
    grouped_bars(
        rows, tools, "ms", f"time, × {SNAPSHOT_BASE}", out / "snapshot_time.png", base=SNAPSHOT_BASE
    )
    return lines


def grouped_bars(
    rows: list[dict[str, Any]],
    tools: list[str],
    key: str,
    label: str,
    path: Path,
    *,
    log: bool = False,
    base: str | None = None,
) -> None:
    pages = pages_of(rows)
    by = {(r["page"], r["tool"]): r for r in rows}
    width = 0.8 / len(tools)
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for i, tool in enumerate(tools):
        xs, ys, low, high = [], [], [], []
        for p, page in enumerate(pages):
            r = by.get((page, tool))
            if r is None:
                continue
            scale = med(by[(page, base)][key]) if base else 1
            values = [v / scale for v in r[key]]
            xs.append(p + (i - (len(tools) - 1) / 2) * width)
            ys.append(med(values))
            low.append(med(values) - min(values))
            high.append(max(values) - med(values))
        ax.bar(xs, ys, width, label=tool, yerr=[low, high], capsize=2)
    if base:
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(TARGETS["snapshot"].bound, color="red", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(pages)), pages, rotation=15)
    ax.set_ylabel(label)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8, ncols=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def navigation_section(rows: list[dict[str, Any]]) -> list[str]:
    by = {(r["page"], r["tool"]): r for r in rows}
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    lines = [
        f"## {targets.NAVIGATION}",
        "",
        f"Milliseconds (median, min–max) and the ratio to {NAV_BASE} on the same page.",
        *textwrap.wrap(
            "Every tool loads the page once as a warm-up, then in rounds, one navigation of "
            f"each tool after another ({browser_bench.NAVIGATION_ROUNDS}× the repetitions on "
            f"a page under {browser_bench.SMALL_MS} ms), every other round in the reverse "
            f"order; each navigation starts after a {browser_bench.QUIET_S * 1000:.0f} ms "
            "pause, so that the page the tool before it loaded has done its after-load work "
            "(straight after goto, a second plain context of the same browser took 1.35× "
            "goto's time). Ours is `open` through the protocol layer, on a session of the "
            f"browser Playwright's plain contexts are in. `{browser_bench.CONTROL}` is a "
            "second plain context measured the same way: its ratio is how far this method "
            "puts goto from itself in this run. On a page whose goto takes under "
            f"{browser_bench.FAST_MS} ms, goto, the control and ours go on alone to "
            f"{browser_bench.MARGIN_ROUNDS} rounds: the target's margin is a couple of "
            "milliseconds there, and 15 rounds left it a standard error of 0.035–0.085.",
            90,
        ),
        "",
        "| page | " + " | ".join(tools) + " |",
        "| --- |" + " ---: |" * len(tools),
    ]
    verdicts = []
    margins = open_margins(rows)
    for page in pages_of(rows):
        base = med(by[(page, NAV_BASE)]["ms"])
        cells = []
        for tool in tools:
            r = by[(page, tool)]
            ratio = med(r["ms"]) / base
            note = ""
            if tool == "ours open":
                ok = TARGETS["open"].met(margins[page])
                verdicts.append(ok)
                note = f" ({margins[page]:+.2f} on the control) {mark(ok)}"
            cells.append(f"{med(r['ms']):,.0f} ({spread(r['ms'])}) {ratio:.2f}×{note}")
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Target: `open`'s ratio to goto ≤ the control's + {TARGETS['open'].bound} on every"
        f" page: {sum(verdicts)} of {len(verdicts)} pages met.",
        "",
    ]
    return lines


PHASE_STEPS = {
    "plain": "`page.goto`, plain context",
    "goto": "`page.goto`, our tab",
    "until": "the open tool (in the dialog watch)",
    "settle": "the load's chores",
    "state": "the result's state",
    "open": "`open` through the protocol",
}


def open_phases_section(by_page: dict[str, dict[str, list[float]]]) -> list[str]:
    steps = [k for k in PHASE_STEPS if any(t.get(k) for t in by_page.values())]
    lines = [
        *textwrap.wrap(
            "Where `open`'s time goes, per page: median ms of each step, on a browser of its "
            "own in the same run, rounds alternating the order. `page.goto` on our tab against "
            "a plain context of the same browser is what the tab's listeners (dialogs, "
            "downloads, failed requests), title observer and popup guard cost a load; `open` "
            "against goto on our tab is what the protocol adds. CPU: this process's, ms per "
            "navigation (the docs' server is a thread of it, alike for each).",
            90,
        ),
        "",
        "| page | "
        + " | ".join(PHASE_STEPS[k] for k in steps)
        + " | our tab ÷ plain | open ÷ our tab | CPU plain / our tab / open |",
        "| --- |" + " ---: |" * (len(steps) + 3),
    ]
    for page, times in by_page.items():
        cells = [f"{med(times[k]):.1f} ({spread(times[k])})" if times.get(k) else "" for k in steps]
        if times.get("plain"):
            cells.append(f"{med(times['goto']) / med(times['plain']):.2f}×")
        else:
            cells.append("")
        cells.append(f"{med(times['open']) / med(times['goto']):.2f}×")
        cpu = [times.get(f"cpu_{k}") for k in ("plain", "goto", "open")]
        cells.append(" / ".join(f"{med(c):.1f}" for c in cpu) if all(cpu) else "")
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    return [*lines, ""]
