"""What one monitor check costs (issue 35 §4), against a plain Playwright loop in the same run.

A check (``daemon/schedule/check.read_watched``: a page of its own in the owner's session,
``goto`` as ``open`` does, the element's visible text) against what a person would write with
Playwright alone: a fresh context of the same browser, ``goto``, ``inner_text`` of the same
selector, closed.  Rounds alternate the two (the order reversed every other round), on a page
of Python's docs; the wall time of each, and the CPU of this process and its Chromium.

And the load of many (``load``): one daemon (real Chromium, one loopback relay), one
controller on nostr-sdk sending ``get_url`` over NIP-17 every ``PACE_S``, for ``SPAN_S``
without monitors and then for ``SPAN_S`` with ``MONITORS`` monitors at a one-minute interval
(on pages of Python's docs, made before the span and past their first check): the daemon
process's and its Chromium's CPU, and the commands' p50, each way.

Usage: ``.venv/bin/python -m bench.run --only monitor``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import nostr_sdk as n

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.daemon.app import Daemon
from nostr_browserd.daemon.config import Config
from nostr_browserd.daemon.schedule.check import read_watched
from tests.fixtures.daemon import SdkController
from tests.fixtures.relays import LocalRelayHandle, free_port

from . import sites
from .browser_bench import cpu_seconds

ROUNDS = 15
SELECTOR = "h1"
MONITORS = 100
SPAN_S = 60.0
PACE_S = 1.0
FIRST_CHECKS_S = 60.0


async def measure(url: str) -> dict[str, Any]:
    """Per way, the wall milliseconds and CPU milliseconds of each round."""
    pool = BrowserPool(BrowserConfig(**sites.BENCH_BROWSER))
    await pool.start()
    try:
        await pool.session("bench")
        assert pool.browser is not None
        browser = pool.browser

        async def ours() -> str:
            return (await read_watched(pool, "bench", url, SELECTOR, False)).text

        async def plain() -> str:
            context = await browser.new_context()
            try:
                page = await context.new_page()
                await page.goto(url)
                return await page.locator(SELECTOR).first.inner_text()
            finally:
                await context.close()

        ways: dict[str, Callable[[], Awaitable[str]]] = {"check": ours, "playwright": plain}
        assert await ours() == await plain(), "both read the same text"
        rows: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
        for n in range(ROUNDS):
            for name in ways if n % 2 == 0 else reversed(list(ways)):
                await asyncio.sleep(0.3)  # the page before is still painting (browser_bench)
                cpu, started = cpu_seconds(os.getpid()), time.perf_counter()
                await ways[name]()
                rows[name].append(
                    {
                        "ms": (time.perf_counter() - started) * 1000,
                        "cpu_ms": (cpu_seconds(os.getpid()) - cpu) * 1000,
                    }
                )
    finally:
        await pool.close()
    return {"rounds": ROUNDS, "selector": SELECTOR, "rows": rows}


def medians(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per way, the median wall and CPU milliseconds."""
    return {
        way: {key: statistics.median(r[key] for r in rows) for key in ("ms", "cpu_ms")}
        for way, rows in results["rows"].items()
    }


async def commands_for(phone: SdkController, daemon: str) -> dict[str, float]:
    """``get_url`` every ``PACE_S`` for ``SPAN_S``: the p50 (ms) and CPU seconds per minute."""
    times = []
    cpu, started = cpu_seconds(os.getpid()), time.monotonic()
    while time.monotonic() - started < SPAN_S:
        sent = time.perf_counter()
        answer = await phone.command(daemon, {"tool": "get_url"})
        assert answer["success"], answer
        times.append((time.perf_counter() - sent) * 1000)
        await asyncio.sleep(max(0.0, PACE_S - (time.perf_counter() - sent)))
    spent = cpu_seconds(os.getpid()) - cpu
    return {"p50_ms": statistics.median(times), "cpu_s_per_min": spent * 60 / SPAN_S}


async def load(docs: str) -> dict[str, Any]:
    """Commands with no monitor, then beside ``MONITORS`` of them."""
    relay = LocalRelayHandle(free_port(), None)
    await relay.start()
    keys = n.Keys.generate()
    daemon: Daemon | None = None
    try:
        with tempfile.TemporaryDirectory() as state:
            config = Config.model_validate(
                {
                    "nostr": {
                        "relays": [relay.url],
                        "embedded_relay": False,
                        "controllers": [keys.public_key().to_hex()],
                        "dm": ["nip17"],
                    },
                    "state": {"dir": state},
                    "local": {"enabled": False},
                    "browser": sites.BENCH_BROWSER,
                    "monitors": {"max_per_controller": MONITORS},
                }
            )
            daemon = Daemon(config)
            await daemon.start()
            me = await daemon.identity.signer.public_key()
            async with SdkController([relay.url], keys) as phone:
                url = docs + sites.DOC_PAGES["controlflow"]
                await phone.command(me, {"tool": "open", "params": {"url": url}})
                without = await commands_for(phone, me)
                pages = list(sites.DOC_PAGES.values())
                for i in range(MONITORS):
                    params = {"url": f"{docs}{pages[i % len(pages)]}?m={i}", "every": "1m"}
                    made = await phone.command(me, {"tool": "monitor_add", "params": params})
                    assert made["success"], made
                await asyncio.sleep(FIRST_CHECKS_S)  # every first check (the baseline) is done
                beside = await commands_for(phone, me)
            return {"monitors": MONITORS, "without": without, "with": beside}
    finally:
        if daemon is not None:
            await daemon.stop()
        relay.stop()


async def main() -> dict[str, Any]:
    with sites.docs() as docs:
        results = await measure(docs + sites.DOC_PAGES["controlflow"])
        results["load"] = await load(docs)
        return results


if __name__ == "__main__":
    print(medians(asyncio.run(main())))
