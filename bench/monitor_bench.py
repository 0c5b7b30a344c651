"""What one monitor check costs (issue 35 §4), against a plain Playwright loop in the same run.

A check (``daemon/schedule/check.read_watched``: a page of its own in the owner's session,
``goto`` as ``open`` does, the element's visible text) against what a person would write with
Playwright alone: a fresh context of the same browser, ``goto``, ``inner_text`` of the same
selector, closed.  Rounds alternate the two (the order reversed every other round), on a page
of Python's docs; the wall time of each, and the CPU of this process and its Chromium.

Usage: ``.venv/bin/python -m bench.run --only monitor``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.daemon.schedule.check import read_watched

from . import sites
from .browser_bench import cpu_seconds

ROUNDS = 15
SELECTOR = "h1"


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


async def main() -> dict[str, Any]:
    with sites.docs() as docs:
        return await measure(docs + sites.DOC_PAGES["controlflow"])


if __name__ == "__main__":
    print(medians(asyncio.run(main())))
