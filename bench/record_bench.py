"""What a recording costs (issue 37 §3), in one run against the same commands unrecorded.

- ``cost``: ``open``, ``click`` and ``snapshot`` through the protocol layer on one session,
  in rounds that alternate recording off and on (the order reversed every other round), on
  a page of Python's docs; each with its own median.  Target: on ÷ off ≤ 1.15×.
- ``cpu_per_minute``: the CPU the daemon's process and its Chromium use while a page that
  paints all the time (a CSS animation) is recorded, scaled to one minute, against the same
  span unrecorded.
- ``stop_to_phone``: a one-minute recording of that page; ``record stop`` sent as text over
  NIP-17, timed until the video's kind 15 is unwrapped, its blob fetched and decrypted (the
  tests' nostr-sdk phone and Blossom server, one loopback relay).

Usage: ``.venv/bin/python -m bench.run --only record``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import nostr_sdk as n

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.browser.session import Session
from nostr_browserd.daemon.app import Daemon
from tests.e2e.test_phone import open_file
from tests.fixtures.blossom import BlossomServer
from tests.fixtures.daemon import SdkController
from tests.fixtures.relays import LocalRelayHandle, free_port

from . import sites
from .browser_bench import cpu_seconds, ours
from .phone import daemon_config

ROUNDS = 10  # 6 gave click 1.04× and 1.16× in two quiet runs
COMMANDS = ("open", "click", "snapshot")
ANIMATED = (  # a page that paints all the time: the screencast's busiest case
    "<!doctype html><title>moving</title><style>@keyframes m{from{left:0}to{left:90%}}"
    "div{position:absolute;width:80px;height:80px;background:teal;animation:m 2s infinite"
    " alternate}</style><div></div>"
)
SPAN_S = 20.0  # of CPU measured each way, scaled to a minute
STOP_AFTER_S = 60.0


async def command_times(session: Session, url: str, recording: bool) -> dict[str, float]:
    """One round: each command's milliseconds, with a recording on or off."""
    if recording:
        await session.start_recording(session.config.record)
    times: dict[str, float] = {}
    try:
        for command in COMMANDS:
            request: dict[str, Any] = {
                "open": {"tool": "open", "params": {"url": url}},
                "click": {"tool": "click", "params": {"selector": "h1"}},
                "snapshot": {"tool": "snapshot", "params": {"interactive": True}},
            }[command]
            await asyncio.sleep(0.3)  # the page before is still painting (browser_bench)
            started = time.perf_counter()
            await ours(session, request)
            times[command] = (time.perf_counter() - started) * 1000
    finally:
        if recording:
            await session.stream.stop_recording()
    return times


async def cost(url: str, moving: str) -> dict[str, Any]:
    """Median ms per command, recording off and on, alternated round by round."""
    pool = BrowserPool(BrowserConfig(result_cap=10**9, **sites.BENCH_BROWSER))
    await pool.start()
    rows: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    try:
        session = await pool.session("bench")
        await command_times(session, url, False)  # warm-up, both ways
        await command_times(session, url, True)
        for n in range(ROUNDS):
            for way in ("off", "on") if n % 2 == 0 else ("on", "off"):
                rows[way].append(await command_times(session, url, way == "on"))
        cpu = {way: await cpu_span(session, moving, way == "on") for way in ("off", "on")}
    finally:
        await pool.close()
    medians = {
        way: {c: statistics.median(r[c] for r in way_rows) for c in COMMANDS}
        for way, way_rows in rows.items()
    }
    return {"rounds": ROUNDS, "rows": rows, "median_ms": medians, "cpu_per_minute": cpu}


async def cpu_span(session: Session, moving: str, recording: bool) -> float:
    """CPU seconds per minute of this process and its browser on a page that always paints."""
    await ours(session, {"tool": "open", "params": {"url": moving}})
    if recording:
        await session.start_recording(session.config.record)
    before, started = cpu_seconds(os.getpid()), time.monotonic()
    await asyncio.sleep(SPAN_S)
    if recording:
        await session.stream.stop_recording()  # encoding's tail counts too
    spent, span = cpu_seconds(os.getpid()) - before, time.monotonic() - started
    return spent * 60 / span


async def stop_to_phone(moving: str) -> dict[str, Any]:
    """A minute's recording, then ``record stop``: ms until the phone holds the video."""
    relay = LocalRelayHandle(free_port(), None)
    await relay.start()
    blossom = BlossomServer()
    blossom.start()
    phone_keys = n.Keys.generate()
    daemon: Daemon | None = None
    try:
        with tempfile.TemporaryDirectory() as state:
            config = daemon_config(
                relay.url, state, [phone_keys.public_key().to_hex()], blossom.url
            )
            daemon = Daemon(config)
            await daemon.start()
            me = await daemon.identity.signer.public_key()
            async with SdkController([relay.url], phone_keys) as phone:
                for text in (f"open {moving}", "record start"):
                    await phone.send(me, text)
                    await phone.wait_reply(lambda r: r.sender == me and r.kind == 14, 60)
                await asyncio.sleep(STOP_AFTER_S)
                before = len(phone.received)
                started = time.perf_counter()
                await phone.send(me, "record stop")
                video = await phone.wait_reply(
                    lambda r: r.sender == me and r.kind == 15 and r.tag("file-type") != "", 120
                )
                size = len(await asyncio.to_thread(open_file, video))
                elapsed = (time.perf_counter() - started) * 1000
                assert len(phone.received) > before
            return {"seconds_recorded": STOP_AFTER_S, "ms": elapsed, "bytes": size}
    finally:
        if daemon is not None:
            await daemon.stop()
        blossom.stop()
        relay.stop()


@contextlib.contextmanager
def animated() -> Any:
    """``ANIMATED`` on 127.0.0.1; yields its URL."""
    with tempfile.TemporaryDirectory(prefix="bench-record-") as where:
        (Path(where) / "moving.html").write_text(ANIMATED)
        server = sites.serve_directory(Path(where))
        try:
            yield f"http://127.0.0.1:{server.server_port}/moving.html"
        finally:
            server.shutdown()
            server.server_close()


async def main() -> dict[str, Any]:
    with sites.docs() as docs, animated() as moving:
        results = await cost(docs + sites.DOC_PAGES["controlflow"], moving)
        results["stop_to_phone"] = await stop_to_phone(moving)
    return results


def summary(results: dict[str, Any]) -> list[str]:
    """The lines the report shows: each command's ratio, CPU per minute, stop to phone."""
    off, on = results["median_ms"]["off"], results["median_ms"]["on"]
    lines = [f"{c}: {on[c]:.0f} / {off[c]:.0f} ms = {on[c] / off[c]:.2f}×" for c in COMMANDS]
    cpu = results["cpu_per_minute"]
    lines.append(f"CPU per minute: {cpu['on']:.1f} s recorded, {cpu['off']:.1f} s not")
    phone = results["stop_to_phone"]
    lines.append(
        f"record stop → video on the phone ({phone['seconds_recorded']:.0f} s recorded, "
        f"{phone['bytes'] / 1e6:.1f} MB): {phone['ms']:.0f} ms"
    )
    return lines


if __name__ == "__main__":
    print("\n".join(summary(asyncio.run(main()))))
