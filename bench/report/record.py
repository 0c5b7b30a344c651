"""The report's section on what a recording costs (bench/record_bench.py)."""

from __future__ import annotations

from typing import Any

from .. import record_bench
from ..targets import RECORD, TARGETS, record_ratios
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
