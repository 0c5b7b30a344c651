"""bench/report.md and its PNG charts from one run's results (bench/results.json).

Every figure is a median over the repetitions with its spread (min–max), and a ratio to the
baseline measured in the same run: Playwright itself for the browser work, the minimal
responder for the Nostr round trip and the load.  The report opens with the table of targets
(bench/targets.py, which also says how a new part adds its row).
"""

from __future__ import annotations

import json
import statistics
import sys
import textwrap
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from . import browser_bench, targets
from .targets import COLD_BASE, LOAD_BASE, NAV_BASE, SNAPSHOT_BASE, TARGETS


def med(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float], unit: str = "", digits: int = 0) -> str:
    return f"{min(values):,.{digits}f}–{max(values):,.{digits}f}{unit}"


def mark(ok: bool) -> str:
    return "✅" if ok else "❌"


def pages_of(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["page"] for r in rows))


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
            "puts goto from itself in this run.",
            90,
        ),
        "",
        "| page | " + " | ".join(tools) + " |",
        "| --- |" + " ---: |" * len(tools),
    ]
    verdicts = []
    for page in pages_of(rows):
        base = med(by[(page, NAV_BASE)]["ms"])
        cells = []
        for tool in tools:
            r = by[(page, tool)]
            ratio = med(r["ms"]) / base
            note = ""
            if tool == "ours open":
                ok = TARGETS["open"].met(ratio)
                verdicts.append(ok)
                note = " " + mark(ok)
            cells.append(f"{med(r['ms']):,.0f} ({spread(r['ms'])}) {ratio:.2f}×{note}")
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Target: `open` ≤ {TARGETS['open'].bound}× goto on every page: "
        f"{sum(verdicts)} of {len(verdicts)} pages met.",
        "",
    ]
    return lines


PHASE_STEPS = {
    "goto": "`page.goto` on our session's tab",
    "until_dialog": "the open tool (goto in the dialog watch)",
    "settle": "the page's event handlers (the load event's title)",
    "state": "the result's state (its title)",
    "open": "`open` through the protocol",
}


def open_phases_section(by_page: dict[str, dict[str, list[float]]]) -> list[str]:
    steps = [k for k in PHASE_STEPS if any(t.get(k) for t in by_page.values())]
    lines = [
        "Where `open`'s time goes, per page (median ms of each step, on a browser of its own in",
        "the same run; `open` ÷ goto on the same tab is the profile's own ratio):",
        "",
        "| page | " + " | ".join(PHASE_STEPS[k] for k in steps) + " | open ÷ goto |",
        "| --- |" + " ---: |" * (len(steps) + 1),
    ]
    for page, times in by_page.items():
        cells = [f"{med(times[k]):.1f}" if times.get(k) else "" for k in steps]
        ratio = med(times["open"]) / med(times["goto"])
        lines.append(f"| {page} | " + " | ".join(cells) + f" | {ratio:.2f}× |")
    return [*lines, ""]


def cold_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    base = med(next(r for r in rows if r["tool"] == COLD_BASE)["ms"])
    lines = [
        f"## {targets.COLD}",
        "",
        "From starting the process to the first answered command (ours: `nostr-browserd run`",
        "to a `get_url` answered on the local channel; Playwright: a Python process that",
        "launches the browser and opens a page; playwright-mcp: the server to an answered",
        "`browser_navigate`; agent-browser: `open` with no daemon running).",
        "",
        "| tool | ms (min–max) | × Playwright |",
        "| --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['tool']} | {med(r['ms']):,.0f} ({spread(r['ms'])}) | "
            f"{med(r['ms']) / base:.2f}× |"
        )
    ours = med(next(r for r in rows if r["tool"] == "ours")["ms"]) / base
    ok = TARGETS["cold"].met(ours)
    lines += [
        "",
        f"Target: ours ≤ {TARGETS['cold'].bound}× Playwright's launch and first page: "
        f"{ours:.2f}× {mark(ok)}.",
    ]
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
        "before the config is read, Chromium launches on it while the daemon imports, and the",
        "steps after run beside the launch:",
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


def round_trip_section(times: dict[str, list[float]]) -> list[str]:
    base = med(times["sdk"])
    names = {
        "sdk": "minimal responder, nostr-sdk crypto",
        "ours": "minimal responder, our crypto",
        "tool": "… + the get_url tool",
        "daemon": "the daemon (guard, audit, dispatch, outbox)",
        "contextvm": "the daemon over ContextVM (MCP tools/call, CEP-4 wrap)",
    }
    lines = [
        "## DM round trip, one requester (in one process)",
        "",
        "A NIP-17 `get_url` request and its reply through a loopback relay (bench_dm.py),",
        "the responders interleaved; last, the same daemon and tool over ContextVM.",
        "",
        "| responder | p50 ms | p90 ms | × minimal |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, values in times.items():
        ordered = sorted(values)
        lines.append(
            f"| {names.get(key, key)} | {med(values):.2f} | "
            f"{ordered[int(len(ordered) * 0.9)]:.2f} | {med(values) / base:.2f}× |"
        )
    return [*lines, ""]


def mean_ms(seconds: list[float]) -> float:
    return sum(seconds) * 1000 / len(seconds)


def hop(row: dict[str, Any]) -> float:
    """Median of a remote call's time beyond the daemon's own for it."""
    return med([ms - d for ms, d in zip(row["ms"], row["dispatch_ms"], strict=True)])


def remote_mcp_section(result: dict[str, Any]) -> list[str]:
    """``mcp --to`` over a loopback relay against playwright-mcp's local call, per page and
    tool; where the time goes when the target is not met."""
    rows = result["rows"]
    by = {(r["page"], r["side"], r["tool"]): r for r in rows}
    sides = list(dict.fromkeys(r["side"] for r in rows))
    groups = ["server", "relay", "daemon", "daemon's browser"]
    lines = [
        f"## {targets.REMOTE}",
        "",
        "One MCP client (the `mcp` SDK's stdio client) calls a snapshot and a click on the same",
        f"page on each server, {result.get('rounds', '')} rounds interleaved after a warm-up",
        "round (bench/remote_mcp.py):",
        "`nostr-browserd mcp --to` over a loopback relay (its own process) to a running daemon",
        "(`nostr-browserd run`, its own process and Chromium), by ContextVM and by our DM",
        "envelope; `nostr-browserd mcp --local` (the same tool in the MCP server's process);",
        "playwright-mcp's local stdio server. The click is on an element that changes nothing",
        "(the admin's theme toggle, the docs' search box); playwright-mcp's click returns a",
        "snapshot too, and our snapshot is capped at 20,000 characters by default (the rest",
        "is paged). CPU milliseconds per call (the mean: /proc counts in 10 ms ticks) are read",
        "for the server's process tree (the `mcp` process, or the local server with its",
        "browser) and, for `mcp --to`, the relay, the daemon and the daemon's browser. Load",
        f"average {result['load'][0]:.1f} before this part and {result['load'][1]:.1f} after.",
        "",
        "| page | tool | server | characters | ms (min–max) | × playwright-mcp | CPU ms / call: "
        + " | ".join(groups)
        + " |",
        "| --- | --- | --- | ---: | ---: | ---: |" + " ---: |" * len(groups),
    ]
    goal = TARGETS["remote_call"]
    ratios = {side: targets.remote_ratios(rows, side) for side in sides}
    verdicts = [goal.met(v) for v in ratios[targets.REMOTE_SIDE].values()]
    for page in pages_of(rows):
        for tool in targets.REMOTE_TOOLS:
            for side in sides:
                r = by[(page, side, tool)]
                ratio = ratios[side][f"{page} {tool}"]
                note = f" {mark(goal.met(ratio))}" if side == targets.REMOTE_SIDE else ""
                cpu = [f"{mean_ms(r['cpu'][g]):.1f}" if g in r["cpu"] else "" for g in groups]
                lines.append(
                    f"| {page} | {tool} | {side} | {med(r['chars']):,.0f} | "
                    f"{med(r['ms']):,.1f} ({spread(r['ms'], digits=1)}) | {ratio:.2f}×{note} | "
                    + " | ".join(cpu)
                    + " |"
                )
    lines += [
        "",
        f"Target: `mcp --to` (ContextVM, the default transport) ≤ {goal.bound}× "
        f"playwright-mcp's call: {sum(verdicts)} of {len(verdicts)} met.",
        "",
    ]
    if all(verdicts):
        return lines
    lines += [
        "Where the time goes (medians, ms). `dispatch` is the daemon's own time from its",
        "audit log (parse, police, run the tool, encode, send the reply and wait for the",
        "relay's OK); `local` is the same for `mcp --local`, the tool with no relay. What the",
        "remote call adds to that is its `hop`: the MCP client's stdio, `mcp --to`'s",
        "encryption, both relay legs and the daemon's intake (unwrap, replay guard, queue).",
        "`get_url`, a tool that does next to nothing, gives the hop's floor.",
        "",
        "| page | tool | playwright-mcp | ours local: call | dispatch | ContextVM: call | "
        "dispatch | hop | DM: call | hop |",
        "| --- | --- |" + " ---: |" * 8,
    ]
    for page in pages_of(rows):
        for tool in ("snapshot", "click", "floor"):
            local, cvm, dm = (by[(page, f"ours {s}", tool)] for s in ("local", "contextvm", "dm"))
            base = by.get((page, "playwright-mcp", tool))
            cells = [
                f"{med(base['ms']):.1f}" if base else "–",
                f"{med(local['ms']):.1f}",
                f"{med(local['dispatch_ms']):.1f}",
                f"{med(cvm['ms']):.1f}",
                f"{med(cvm['dispatch_ms']):.1f}",
                f"{hop(cvm):.1f}",
                f"{med(dm['ms']):.1f}",
                f"{hop(dm):.1f}",
            ]
            name = "get_url" if tool == "floor" else tool
            lines.append(f"| {page} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def load_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["system"], r["controllers"])].append(r)
    levels = sorted({n for _, n in groups})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    lines = [
        f"## {targets.LOAD}",
        "",
        "The relay, the load generator (pre-signed wraps, published on a connection apart from",
        "the one its replies arrive on, every frame acknowledged at once, replies matched",
        "without decrypting) and the system",
        "under test each run in their own process; each controller sends its next `get_url`",
        "when its previous reply arrives. Medians over the repetitions (min–max); the echo",
        "publishes replies built in advance (no crypto: the generator's and the relay's own",
        "floor), the minimal responder is nostr-sdk's Rust crypto and our relay pool with no",
        "browser. CPU seconds per 1,000 commands are read from /proc around the generator's",
        "timed window.",
        "",
        "| controllers | system | commands/s | × minimal | p50 ms | × minimal | p95 ms | "
        "CPU s / 1,000: system | browser | relay | generator | replies checked |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    verdicts = []
    ratios = targets.load_ratios(rows)
    for n in levels:
        base = groups[(LOAD_BASE, n)]
        base_tp = med([r["throughput"] for r in base])
        base_p50 = med([r["p50_ms"] for r in base])
        for system in systems:
            runs = groups[(system, n)]
            tp = [r["throughput"] for r in runs]
            p50 = [r["p50_ms"] for r in runs]
            p95 = [r["p95_ms"] for r in runs]
            cpu = defaultdict(list)
            for r in runs:
                for side, value in r["cpu_per_1000"].items():
                    cpu[side].append(value)
            own = cpu.get("daemon") or cpu.get("responder") or cpu.get("echo") or [0]
            note_tp = note_p50 = ""
            if system == "daemon":
                ok_tp = TARGETS["throughput"].met(ratios[n]["throughput"])
                ok_p50 = TARGETS["p50"].met(ratios[n]["p50"])
                verdicts += [ok_tp, ok_p50]
                note_tp, note_p50 = " " + mark(ok_tp), " " + mark(ok_p50)
            checked = sum(r["check"]["ok"] for r in runs)
            failed = sum(r["check"]["failed"] for r in runs)
            lines.append(
                f"| {n} | {system} | {med(tp):.1f} ({spread(tp, digits=1)}) | "
                f"{med(tp) / base_tp:.2f}×{note_tp} | {med(p50):.1f} ({spread(p50, digits=1)}) | "
                f"{med(p50) / base_p50:.2f}×{note_p50} | {med(p95):.1f} | {med(own):.2f} | "
                f"{med(cpu.get('browser', [0])):.2f} | {med(cpu['relay']):.2f} | "
                f"{med(cpu['generator']):.2f} | {checked} ok, {failed} failed |"
            )
    lines += [
        "",
        f"Targets (daemon against the minimal responder at the same load): throughput ≥ "
        f"{TARGETS['throughput'].bound}×, p50 ≤ {TARGETS['p50'].bound}×: "
        f"{sum(verdicts)} of {len(verdicts)} met.",
        "",
        *load_floor_and_cpu(ratios),
        "",
        "![throughput](throughput.png)",
        "",
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for system in systems:
        for ax, key in ((left, "throughput"), (right, "p50_ms")):
            values = [[r[key] for r in groups[(system, n)]] for n in levels]
            ys = [med(v) for v in values]
            err = [
                [y - min(v) for y, v in zip(ys, values, strict=True)],
                [max(v) - y for y, v in zip(ys, values, strict=True)],
            ]
            ax.errorbar(levels, ys, yerr=err, marker="o", capsize=3, label=system)
    left.set_ylabel("commands/s")
    right.set_ylabel("p50 latency, ms")
    for ax in (left, right):
        ax.set_xlabel("controllers at once")
        ax.set_xscale("log")
        ax.set_xticks(levels, [str(n) for n in levels])
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)
    return lines


def load_floor_and_cpu(ratios: dict[int, dict[str, float]]) -> list[str]:
    """The daemon's CPU per command over the minimal responder's and the generator's floor
    (the echo's rate over the daemon's), per level."""
    cpu, floor = TARGETS["cpu"], TARGETS["generator"]
    lines = []
    for n, level in ratios.items():
        line = (
            f"- {n} controller(s): daemon CPU per command {level['cpu']:.2f}× the minimal "
            f"responder's {mark(cpu.met(level['cpu']))} (target ≤ {cpu.bound}×)"
        )
        if "generator" in level:
            line += (
                f"; the generator alone (against the echo) reaches {level['generator']:.1f}× "
                f"the daemon's rate {mark(floor.met(level['generator']))} "
                f"(target ≥ {floor.bound}×)"
            )
        lines.append(line + ".")
    return lines


def scale_section(scale: dict[str, Any], out: Path) -> list[str]:
    """Commands/s with 1, 2, 3 workers (× the 1-worker run), per-command database cost, and
    contexts per GB of a worker's Chromium."""
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in scale["levels"]:
        groups[r["workers"]].append(r)
    levels = sorted(groups)
    base = med([r["throughput"] for r in groups[levels[0]]])
    lines = [
        f"## {targets.SCALE}",
        "",
        f"{scale['controllers']} controllers, each a closed loop of {scale['per_controller']}",
        "`get_url` commands sent through two relays (LocalRelays, each its own process) to N",
        "`nostr-browserd run` workers with one identity file and one database (the tests'",
        "harness, tests/fixtures/cluster.py). Every worker receives every command through every",
        "relay and the claim decides who runs it. The database cost is `pg_stat_statements`",
        "over the timed window (time spent in the server) divided by the commands answered,",
        "the workers' background work included; CPU seconds per 1,000 commands are read from",
        "/proc. Medians (min–max) over the runs; the ratio is to 1 worker in the same run.",
        "",
        "| workers | commands/s | × 1 worker | p50 ms | statements / command | database ms / "
        "command | CPU s / 1,000: workers | PostgreSQL | relays | commands run per worker | "
        "replies checked |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for n in levels:
        runs = groups[n]
        tp = [r["throughput"] for r in runs]
        cpu = {k: med([r["cpu_per_1000"][k] for r in runs]) for k in runs[0]["cpu_per_1000"]}
        checked = sum(r["check"]["ok"] for r in runs)
        bad = sum(r["check"]["failed"] + r["check"]["duplicates"] for r in runs)
        served = " / ".join(str(x) for x in runs[-1]["served"])
        lines.append(
            f"| {n} | {med(tp):.1f} ({spread(tp, digits=1)}) | {med(tp) / base:.2f}× | "
            f"{med([r['p50_ms'] for r in runs]):.0f} | "
            f"{med([r['database']['statements'] for r in runs]):.1f} | "
            f"{med([r['database']['ms'] for r in runs]):.2f} | {cpu['workers']:.2f} | "
            f"{cpu['postgres']:.2f} | {cpu['relays']:.2f} | {served} | "
            f"{checked} ok, {bad} failed or twice |"
        )
    lines += ["", "Statements per command (the last run of each level, most frequent first):", ""]
    for n in levels:
        top = groups[n][-1]["database"]["top"]
        cells = "; ".join(f"`{t['query'][:60]}` {t['per_command']:.2f}" for t in top[:4])
        lines.append(f"- {n} worker(s): {cells}")
    lines += [
        "",
        "Contexts per GB: PSS of one worker's Chromium (MB) with K controllers, each holding",
        "one page in its own context (opened over DMs); MB per context is the least-squares",
        "slope.",
        "",
        "| page | "
        + " | ".join(f"K = {k}" for k in scale["contexts"][0]["pss_mb"])
        + " | MB per context | contexts per GB |",
        "| --- |" + " ---: |" * (len(scale["contexts"][0]["pss_mb"]) + 2),
    ]
    for row in scale["contexts"]:
        cells = " | ".join(f"{mb:,.0f}" for mb in row["pss_mb"].values())
        lines.append(
            f"| {row['page']} | {cells} | {row['mb_per_context']:.1f} | "
            f"{row['contexts_per_gb']:.0f} |"
        )
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.bar([str(n) for n in levels], [med([r["throughput"] for r in groups[n]]) for n in levels])
    left.set_xlabel("workers")
    left.set_ylabel("commands/s")
    right.bar(
        [str(n) for n in levels],
        [med([r["database"]["statements"] for r in groups[n]]) for n in levels],
    )
    right.set_xlabel("workers")
    right.set_ylabel("database statements per command")
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)
    plt.close(fig)
    return [*lines, "", "![scale-out](scale.png)", ""]


def round_trip_chart(load_rows: list[dict[str, Any]], out: Path) -> list[str]:
    """The round trip against the minimal responder: one controller, out of process."""
    one = [r for r in load_rows if r["controllers"] == 1]
    systems = list(dict.fromkeys(r["system"] for r in one))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ys = [med([r["p50_ms"] for r in one if r["system"] == s]) for s in systems]
    ax.bar(systems, ys, color=["tab:gray", "tab:blue"][: len(systems)])
    ax.set_ylabel("p50 round trip, ms (one controller)")
    fig.tight_layout()
    fig.savefig(out / "round_trip.png", dpi=110)
    plt.close(fig)
    return ["![round trip](round_trip.png)", ""]


def relay_section(times: dict[str, list[float]]) -> list[str]:
    base = med(times["same"])
    names = {
        "same": "a raw responder replies on the connection that carried the request",
        "separate": "… on a second connection of its own",
        "pool": "our RelayPool (separate publish connection, TCP_QUICKACK)",
    }
    lines = [
        "## Request→reply through a relay, by where the reply is published (bench_relay.py)",
        "",
        "| responder | p50 ms | × same connection |",
        "| --- | ---: | ---: |",
    ]
    for key, values in times.items():
        lines.append(f"| {names.get(key, key)} | {med(values):.2f} | {med(values) / base:.2f}× |")
    return [*lines, ""]


def phone_section(phone: dict[str, Any], out: Path) -> list[str]:
    """The picture on the phone by file message or by JSON parts; mcp --to's large files."""
    rows = phone["phone"]
    ms = {way: [r["ms"] for r in rows[way]] for way in ("file", "json")}
    ratio, goal = targets.phone_ratio(phone), TARGETS["phone"]
    names = {
        "file": "text `screenshot`: kind 15 unwrapped, blob fetched, x/ox checked, decrypted",
        "json": "JSON `screenshot`: numbered parts joined, sha256 checked, base64 decoded",
    }
    lines = [
        f"## {targets.PHONE}",
        "",
        f"One real daemon (Chromium) with `[files] blossom_servers` on the tests' Blossom server "
        f"and a loopback relay; the phone is nostr-tools in Node with WebCrypto "
        f"(bench/phone.mjs); the same page (`{phone['page']}`, "
        f"{rows['file'][0]['size'] / 1024:.0f} KB of PNG), the two ways interleaved, "
        f"{len(ms['file'])} rounds each. Bytes are the gift wraps the phone received, and the "
        "blob it fetched.",
        "",
        "| way | median ms | spread | × JSON parts | KB on the wire | messages |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for way in ("file", "json"):
        row = rows[way][0]
        messages = "kind 15 + kind 14" if way == "file" else f"{row['parts']} parts"
        lines.append(
            f"| {names[way]} | {med(ms[way]):.0f} | {spread(ms[way], ' ms')} | "
            f"{med(ms[way]) / med(ms['json']):.2f}× | {row['wire'] / 1024:.0f} | {messages} |"
        )
    text_ms = [r["text_ms"] for r in rows["file"]]
    lines += [
        "",
        f"The text reply (after the file message) reached the phone in {med(text_ms):.0f} ms "
        f"({spread(text_ms, ' ms')}). File message / JSON parts: {ratio:.2f}× "
        f"{mark(goal.met(ratio))} (target ≤ {goal.bound:.1f}×).",
        "",
        "### `mcp --to`'s large files: by a Blossom link, or in parts",
        "",
        "`mcp --to`'s own clients, `RemoteBackend` (our DM envelope) and `ContextVmBackend` "
        "(ContextVM), each as it runs (a file of 256 KB or more by a sealed Blossom link: "
        "uploaded by the daemon, fetched, x/ox-checked and decrypted by the client) and with "
        "`links=False` (the DM envelope's parts, CEP-22's parts). Each time includes taking "
        "the file in the browser; every link round fetched its blob once, every parts round "
        "none.",
        "",
        "| file | page | way | size KB | median ms | spread | × DM parts |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    charted: dict[str, list[float]] = {
        "phone: file message": ms["file"],
        "phone: JSON parts": ms["json"],
    }
    for name, ways in phone["mcp"].items():
        base = med([r["ms"] for r in ways["dm parts"]])
        for way, found in ways.items():
            times = [r["ms"] for r in found]
            charted[f"mcp {name}: {way}"] = times
            lines.append(
                f"| {name} | `{phone['mcp_pages'][name]}` | {way} | {found[0]['size'] / 1024:,.0f} "
                f"| {med(times):,.0f} | {spread(times, ' ms')} | {med(times) / base:.2f}× |"
            )
    phone_chart(charted, out / "phone.png")
    return [*lines, "", "![file message against parts](phone.png)", ""]


def phone_chart(times: dict[str, list[float]], path: Path) -> None:
    """Medians with their spreads, one bar per way."""
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(times) + 1))
    names = list(times)[::-1]
    medians = [med(times[n]) for n in names]
    low = [m - min(times[n]) for m, n in zip(medians, names, strict=True)]
    high = [max(times[n]) - m for m, n in zip(medians, names, strict=True)]
    ax.barh(names, medians, xerr=[low, high], capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("ms from the request to the file in hand (log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def profile_section(profile: dict[str, Any]) -> list[str]:
    total = profile["total_s"]
    per = 1000 / profile["commands"] if profile.get("commands") else None
    lines = [
        f"## {targets.PROFILE}",
        "",
        f"cProfile switched on in the daemon for the generator's timed window only "
        f"({profile.get('commands', 0):,} `get_url` commands): own time by kind of work, of "
        f"{total:.1f} s busy in the daemon's event loop (cProfile slows Python code, not the "
        "C and Rust it calls; waiting in epoll is not counted).",
        "",
        "| kind of work | seconds | per 1,000 commands | share |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind, seconds in profile["kinds"].items():
        if kind.startswith("idle"):
            continue
        scaled = f"{seconds * per:.2f}" if per else "–"
        lines.append(f"| {kind} | {seconds:.2f} | {scaled} | {seconds / total:.0%} |")
    if profile.get("secp256k1") and profile.get("commands"):
        calls = ", ".join(
            f"`{name}` {n / profile['commands']:.1f}" for name, n in profile["secp256k1"].items()
        )
        lines += ["", f"libsecp256k1 calls per command (request and reply): {calls}."]
    lines += ["", "| function | own s | cumulative s | calls |", "| --- | ---: | ---: | ---: |"]
    for f in profile["top"]:
        lines.append(
            f"| `{f['function']}` | {f['own_s']:.2f} | {f['cumulative_s']:.2f} | {f['calls']:,} |"
        )
    return [*lines, ""]


def job_section(result: dict[str, Any]) -> list[str]:
    """The report's part: characters per step and over the job, and the target."""
    chars, steps = result["chars"], result["steps"]
    tools = list(chars)
    totals = {tool: sum(chars[tool]) for tool in tools}
    ratio, smallest = targets.job_ratio(result)
    ok = TARGETS["job_chars"].met(ratio) and result["readable"]
    shots = [i for i, step in enumerate(steps) if "snapshot" in step]
    rest = [i for i in range(len(steps)) if i not in shots]

    def part(tool: str, which: list[int]) -> int:
        return sum(chars[tool][i] for i in which)

    lines = [
        f"## {targets.JOB}",
        "",
        "Every tool adds a user on the Django admin and makes them staff: open the form, an",
        "interactive snapshot, three fills, Save, read the message, a snapshot of the user's",
        "page, tick Staff status, a snapshot again; each acts only on refs from its own latest",
        "snapshot. Characters of every reply: ours in the text a phone and an MCP host get, with",
        "`snapshot -i --delta` (beside it the JSON `ask`'s model gets); playwright-mcp over MCP,",
        "whose actions answer with the page; agent-browser's CLI with its `snapshot -i --delta`.",
        "",
        "| step | " + " | ".join(tools) + " |",
        "| --- |" + " ---: |" * len(tools),
    ]
    for i, step in enumerate(steps):
        lines.append(f"| {step} | " + " | ".join(f"{chars[t][i]:,}" for t in tools) + " |")
    lines += [
        "| **the whole job** | " + " | ".join(f"**{totals[t]:,}**" for t in tools) + " |",
        "",
        f"Where the characters go: the {len(shots)} snapshots are {part('ours', shots):,} of "
        f"ours against {part(smallest, shots):,} of {smallest}'s "
        f"({part('ours', shots) / part(smallest, shots):.2f}×), the other {len(rest)} replies "
        f"{part('ours', rest):,} against {part(smallest, rest):,} (ours name the tab, "
        "`[t1] title address`, when it moved: after open and after the click that loaded the "
        "user's page).",
        "",
        f"Target: ours ≤ {TARGETS['job_chars'].bound}× the smallest peer ({smallest}) over "
        "the whole job, "
        f"every step readable on its own: {ratio:.2f}× {mark(ok)}; the steps stand alone: "
        f"{'yes' if result['readable'] else 'no'} (the first snapshot says it is full, the last "
        "one names the ticked box, checked, by its ref). Ours' last step, as sent:",
        "",
        "```",
        result["ours_replies"][-1],
        "```",
        "",
    ]
    return lines


def measured_when(results: dict[str, Any]) -> list[str]:
    """Which parts were measured when, if some were redone alone (``--only``)."""
    when: dict[str, list[str]] = defaultdict(list)
    for name, date in results.get("measured", {}).items():
        when[date].append(name)
    if len(when) < 2:
        return []
    parts = "; ".join(f"{', '.join(names)}: {date}" for date, names in sorted(when.items()))
    return [f"Parts measured at different times: {parts}.", ""]


TEXT_SECTIONS: dict[str, Callable[[Any], list[str]]] = {
    "round_trip": round_trip_section,
    "relay": relay_section,
    "remote_mcp": remote_mcp_section,
    "job": job_section,
}
"""The sections with no chart, by their part's key in the results, in the report's order."""


def preamble(results: dict[str, Any]) -> list[str]:
    """The run's machine, peers and repetitions, the parts that failed, and the targets."""
    m = results["machine"]
    lines = [
        "# Benchmarks: nostr-browserd against Playwright, playwright-mcp and agent-browser",
        "",
        f"One `make bench` run on {results['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB, Linux {m['kernel']}, Python {m['python']}; load average "
        f"{m['load_before']:.1f} before and {m.get('load_after', 0):.1f} after (the machine is "
        "shared: compare ratios, not times). Peers: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items())
        + "; every tool drives Debian's chromium-headless-shell. "
        f"Medians of {results['reps']} repetitions after a warm-up ({results['reps'] * 3} on "
        "pages that load in under 0.3 s, which are noisier); the whole run took "
        f"{results.get('seconds', 0) / 60:.1f} minutes.",
        "",
    ]
    lines += measured_when(results)
    for name, error in results.get("failed", {}).items():
        lines += [f"**The {name} part failed in this run:** `{error}`", ""]
    return lines + targets.section(results)


def write(results: dict[str, Any], out: Path) -> None:
    lines = preamble(results)
    if "snapshots" in results:
        lines += snapshot_section(results["snapshots"], out)
    if "navigation" in results:
        lines += navigation_section(results["navigation"])
    if "open_phases" in results:
        lines += open_phases_section(results["open_phases"])
    if "cold_start" in results:
        lines += cold_section(results["cold_start"], out)
        lines += cold_timeline_section(results.get("cold_timeline", []))
    if "memory" in results:
        lines += memory_section(results["memory"], out)
    if "load" in results:
        lines += load_section(results["load"], out)
        lines += round_trip_chart(results["load"], out)
    if "scale" in results:
        lines += scale_section(results["scale"], out)
    for key, section in TEXT_SECTIONS.items():
        if key in results:
            lines += section(results[key])
    if "phone" in results:
        lines += phone_section(results["phone"], out)
    if "profile" in results:
        lines += profile_section(results["profile"])
    (out / "report.md").write_text("\n".join(lines))


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    write(json.loads((here / "results.json").read_text()), here)
    sys.exit(0)
