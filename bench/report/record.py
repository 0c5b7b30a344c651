"""The report's sections on what the features of issues 35 and 37 cost: a monitor check
(bench/monitor_bench.py) and a recording (bench/record_bench.py)."""

from __future__ import annotations

from typing import Any

from .. import monitor_bench, record_bench
from ..targets import MONITOR, RECORD, TARGETS, monitor_load, monitor_ratios, record_ratios
from .figures import mark


def record_section(record: dict[str, Any]) -> list[str]:
    """Each command with a recording on and off, CPU per recorded minute, stop to phone."""
    ratios = record_ratios(record)
    lines = [
        f"## {RECORD}",
        "",
        f"`open`, `click` and `snapshot` on one session, {record['rounds']} rounds alternating"
        " recording off and on (medians); the CPU of the daemon's process and its Chromium over"
        f" {record_bench.SPAN_S:.0f} s of a page that paints all the time, scaled to a minute;"
        " and a one-minute recording's `record stop`, sent as text over NIP-17, until the"
        " phone (nostr-sdk) has fetched and decrypted the video.",
        "",
    ]
    lines += [f"- {line}" for line in record_bench.summary(record)]
    met = all(TARGETS["record"].met(v) for v in ratios.values())
    lines += ["", f"Target: each ≤ {TARGETS['record'].bound}× off: {mark(met)}", ""]
    return lines


def monitor_section(monitor: dict[str, Any]) -> list[str]:
    """A check against a plain Playwright loop: medians of time and CPU, and the ratios."""
    medians = monitor_bench.medians(monitor)
    ratios = monitor_ratios(monitor)
    lines = [
        f"## {MONITOR}",
        "",
        f"{monitor['rounds']} rounds alternating a monitor's check (a page of its own in the"
        " owner's session, `goto` as `open` does, the visible text of"
        f" `{monitor['selector']}`) and a plain Playwright loop (a fresh context, `goto`,"
        " `inner_text`), on a page of Python's docs. CPU is this process's and its Chromium's.",
        "",
        "| way | time (ms) | CPU (ms) |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {way} | {m['ms']:.0f} | {m['cpu_ms']:.0f} |" for way, m in medians.items()]
    met = all(TARGETS["monitor"].met(v) for v in ratios.values())
    shown = ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items())
    lines += ["", f"Target: each ≤ {TARGETS['monitor'].bound}×: {shown} {mark(met)}", ""]
    if "slices" in monitor.get("load", {}):
        load = monitor_load(monitor["load"])
        pairs = load["pairs"]
        goal = TARGETS["monitor_load"]
        lines += [
            f"With {monitor['load']['monitors']} monitors at a one-minute interval, a"
            " controller's `get_url` over NIP-17 (one a second, its time from the send to the"
            " reply pushed by its relay), in slices of"
            f" {monitor_bench.SLICE_S:.0f} s alternating the monitors stopped and running in"
            f" one daemon ({len(pairs)} of each): p50 {load['p50_with']:.1f} ms against"
            f" {load['p50_without']:.1f} ms without ({load['ratio']:.2f}×; each pair"
            f" {min(pairs):.2f}–{max(pairs):.2f}×; goal ≤ {goal.bound}×"
            f" {mark(goal.met(load['ratio']))}). {load['checks_a_minute']:.0f} checks a minute"
            " ran in the slices with them; this process (daemon, relay, controller) and its"
            f" Chromium used {load['cpu_with']:.1f} s of CPU a minute against"
            f" {load['cpu_without']:.1f} s. Between checks nothing stays open: a check's page"
            " is a background tab of the owner's session, closed after it.",
            "",
        ]
    return lines
