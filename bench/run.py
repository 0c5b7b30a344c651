"""``make bench``: every measurement in one run, then bench/report.md and its charts.

``python -m bench.run [--reps N] [--only snapshots,load,…]`` writes bench/results.json,
bench/report.md and bench/*.png.  Every figure is reported as a ratio to a baseline measured
in the same run, because the machine is shared and its speed is not ours to know.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import tempfile
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import (
    bench_dm,
    bench_relay,
    browser_bench,
    job,
    load,
    monitor_bench,
    phone,
    profile,
    record_bench,
    remote_mcp,
    report,
    scale,
    sites,
)
from .peers import versions

HERE = Path(__file__).resolve().parent
PARTS = (
    "snapshots",
    "navigation",
    "job",
    "cold",
    "memory",
    "round_trip",
    "relay",
    "phone",
    "remote_mcp",
    "load",
    "profile",
    "scale",
    "record",
    "monitor",
)


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(int(memory) / 1024**2, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_before": os.getloadavg()[0],
    }


def part(results: dict[str, Any], name: str) -> contextlib.AbstractContextManager[None]:
    """Run one part; a failure is recorded for the report and the next part still runs."""

    @contextlib.contextmanager
    def guarded() -> Iterator[None]:
        started = time.monotonic()
        print(name, flush=True)
        try:
            yield
        except Exception as exc:
            traceback.print_exc()
            results.setdefault("failed", {})[name] = f"{type(exc).__name__}: {exc}"[:300]
        results.setdefault("part_seconds", {})[name] = time.monotonic() - started
        results.setdefault("measured", {})[name] = results["date"]  # parts may be redone alone
        (HERE / "results.json").write_text(json.dumps(results, indent=1))

    return guarded()


async def browser_parts(
    results: dict[str, Any], parts: set[str], reps: int, only_pages: list[str] | None
) -> None:
    if parts & {"snapshots", "navigation"}:
        with sites.docs() as docs, sites.django_admin() as admin:
            pages = {name: docs + path for name, path in sites.DOC_PAGES.items()}
            pages |= {name: admin + path for name, path in sites.ADMIN_PAGES.items()}
            pages = {k: v for k, v in pages.items() if not only_pages or k in only_pages}
            tools = browser_bench.Tools()
            await tools.start()
            try:
                if "navigation" in parts:
                    with part(results, "navigation"):
                        results["navigation"] = await browser_bench.navigation(tools, pages, reps)
                if "snapshots" in parts:
                    with part(results, "snapshots"):
                        results["snapshots"] = await browser_bench.snapshots(tools, pages, reps)
            finally:
                await tools.close()
            if "navigation" in parts:  # on a browser of its own, the peers' closed
                with part(results, "open_phases"):
                    results["open_phases"] = {
                        name: await browser_bench.open_phases(url, reps * 3)
                        for name, url in pages.items()
                    }
    if "job" in parts:
        with part(results, "job"), sites.django_admin() as admin:
            results["job"] = await job.measure(admin)
    if "monitor" in parts:
        with part(results, "monitor"):
            results["monitor"] = await monitor_bench.main()
    if "cold" in parts:
        with part(results, "cold"):
            results["cold_start"], results["cold_timeline"] = await browser_bench.cold_starts(reps)
    if "memory" in parts:
        with part(results, "memory"), sites.docs() as docs:
            url = docs + sites.DOC_PAGES["controlflow"]
            results["memory"] = await browser_bench.memory(url, [1, 2, 4, 8])


async def nostr_parts(results: dict[str, Any], parts: set[str], reps: int) -> None:
    """The parts that go through relays: round trips, the phone, mcp --to, recordings."""
    if "round_trip" in parts:
        with part(results, "round_trip"):
            times = await bench_dm.main(100)
            results["round_trip"] = {k: [t * 1000 for t in v] for k, v in times.items()}
    if "relay" in parts:
        with part(results, "relay"):
            times = await bench_relay.main(100)
            results["relay"] = {k: [t * 1000 for t in v] for k, v in times.items()}
    if "phone" in parts:
        with part(results, "phone"):
            results["phone"] = await phone.main(reps * 3)
    if "remote_mcp" in parts:
        with part(results, "remote_mcp"):
            results["remote_mcp"] = await remote_mcp.run(reps)
    if "record" in parts:
        with part(results, "record"):
            results["record"] = await record_bench.main()


async def async_parts(
    results: dict[str, Any], parts: set[str], reps: int, only_pages: list[str] | None
) -> None:
    await browser_parts(results, parts, reps, only_pages)
    await nostr_parts(results, parts, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3, help="repetitions after the warm-up")
    parser.add_argument("--only", default=",".join(PARTS), help=f"parts: {', '.join(PARTS)}")
    parser.add_argument("--pages", help="comma-separated pages (default: all)")
    parser.add_argument("--levels", default="1,10,50", help="controllers at once, per run")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    logging.basicConfig(level=logging.ERROR)
    results: dict[str, Any] = {}
    if parts != set(PARTS) and (HERE / "results.json").exists():  # redo some parts only
        results = json.loads((HERE / "results.json").read_text())
        results.pop("failed", None)
    results |= {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": versions(),
        "reps": args.reps,
    }
    pages = args.pages.split(",") if args.pages else None
    asyncio.run(async_parts(results, parts, args.reps, pages))
    if "load" in parts:
        with part(results, "load"):
            results["load"] = load.load([int(n) for n in args.levels.split(",")], args.reps)
    if "profile" in parts:
        with part(results, "profile"), tempfile.TemporaryDirectory() as where:
            stats = str(Path(where) / "daemon.prof")
            rows = load.load([10], 1, profile=stats, systems=("daemon",))
            results["profile"] = profile.summary(stats)
            results["profile"]["commands"] = rows[0]["answered"]
    if "scale" in parts:
        with part(results, "scale"):
            results["scale"] = scale.run(args.reps)
    results["machine"]["load_after"] = os.getloadavg()[0]
    results["seconds"] = sum(  # of this run's parts
        t
        for name, t in results["part_seconds"].items()
        if results["measured"].get(name) == results["date"]
    )
    (HERE / "results.json").write_text(json.dumps(results, indent=1))
    report.write(results, HERE)
    print(f"bench/report.md written ({results['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
