"""bench/report.md and its PNG charts from one run's results (bench/results.json).

One module per part of the report (browser, start, load, nostr, phone, job, record); this one puts
them in order under the preamble.

Every figure is a median over the repetitions with its spread (min–max), and a ratio to the
baseline measured in the same run: Playwright itself for the browser work, the minimal
responder for the Nostr round trip and the load.  The report opens with the table of targets
(bench/targets.py, which also says how a new part adds its row).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import targets
from .browser import navigation_section, open_phases_section, snapshot_section
from .job import job_section
from .load import load_section, profile_section, round_trip_chart, scale_section
from .nostr import relay_section, remote_mcp_section, round_trip_section
from .phone import phone_section
from .record import monitor_section, record_section
from .start import cold_section, cold_timeline_section, memory_section

__all__ = ["write"]


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
    "record": record_section,
    "monitor": monitor_section,
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
