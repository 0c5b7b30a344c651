"""The report's sections on what the features of issues 35 and 37 cost: a monitor check
(bench/monitor_bench.py) and a recording (bench/record_bench.py)."""

from __future__ import annotations

from typing import Any

from .. import monitor_bench, record_bench
from ..targets import MONITOR, RECORD, TARGETS, monitor_ratios, record_ratios
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
    if "load" in monitor:
        load = monitor["load"]
        without, beside = load["without"], load["with"]
        lines += [
            f"With {load['monitors']} monitors at a one-minute interval, a controller's"
            f" `get_url` over NIP-17 (one a second for {monitor_bench.SPAN_S:.0f} s): p50"
            f" {beside['p50_ms']:.0f} ms against {without['p50_ms']:.0f} ms without"
            f" ({beside['p50_ms'] / without['p50_ms']:.2f}×, goal ≤ 1.1×); the daemon and its"
            f" Chromium used {beside['cpu_s_per_min']:.1f} s of CPU a minute against"
            f" {without['cpu_s_per_min']:.1f} s. Between checks nothing stays open: a check's"
            " page is a background tab of the owner's session, closed after it.",
            "",
        ]
    return lines
