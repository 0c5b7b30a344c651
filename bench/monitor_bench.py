"""What one monitor check costs (issue 35 §4), against a plain Playwright loop in the same run.

A check (``daemon/schedule/check.read_watched``: a page of its own in the owner's session,
``goto`` as ``open`` does, the element's visible text) against what a person would write with
Playwright alone: a fresh context of the same browser, ``goto``, ``inner_text`` of the same
selector, closed.  Rounds alternate the two (the order reversed every other round), on a page
of Python's docs; the wall time of each, and the CPU of this process and its Chromium.

And the load of many (``load``): one daemon (real Chromium, one loopback relay), one
controller on nostr-sdk sending ``get_url`` over NIP-17 every ``PACE_S``, beside
``MONITORS`` monitors at a one-minute interval on pages of Python's docs (made first, each
past its first check).  The monitors' scheduler is stopped and started in alternating
``SLICE_S`` slices (``PAIRS`` of each), so drift cancels: per slice, the commands' times,
the CPU of this process and its Chromium, and the checks run.  The ratio is of the pooled
medians, its spread that of each pair's.

Usage: ``.venv/bin/python -m bench.run --only monitor``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import secrets
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
from nostr_browserd.daemon.schedule.service import Scheduler
from tests.fixtures.daemon import SdkController
from tests.fixtures.relays import LocalRelayHandle, free_port

from . import sites
from .browser_bench import cpu_seconds

ROUNDS = 15
SELECTOR = "h1"
MONITORS = 100
PACE_S = 1.0
FIRST_CHECKS_S = 120.0  # at most, for every monitor's first check (its baseline)
# Slices alternate without and with the monitors running, in one daemon, so that the
# machine's drift falls on both alike.  Their length divides the monitors' minute an odd
# number of times, so the slices with them fall on every part of it (5 × 12 s = 60 s).
SLICE_S = 12.0
PAIRS = 5


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


class Replies:
    """The controller's replies as its relay pushes them (a subscription, as a phone app
    has): a command's time is its send to its reply's arrival, with no polling step in it
    and no cost that grows with the replies before it."""

    def __init__(self, phone: SdkController) -> None:
        self.phone = phone
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Replies:
        me = self.phone.keys.public_key()
        mine = n.Filter().kind(n.Kind(1059)).pubkey(me).limit(0)  # from now on
        await self.phone.client.subscribe(n.ReqTarget.auto([mine]))
        self._task = asyncio.ensure_future(self._listen())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _listen(self) -> None:
        stream = self.phone.client.notifications()
        while (note := await stream.next()) is not None:
            if not isinstance(note, n.ClientNotification.NEW_EVENT):
                continue
            gift = n.UnwrappedGift.from_gift_wrap(self.phone.keys, note.event)
            try:
                answer = json.loads(gift.rumor().content())
            except ValueError:  # a text message: no command's answer
                continue
            if not isinstance(answer, dict):
                continue
            waiting = self._waiting.pop(str(answer.get("id")), None)
            if waiting is not None and not waiting.done():
                waiting.set_result(answer)

    async def command(self, daemon: str, tool: str) -> tuple[dict[str, Any], float]:
        """The answer to ``tool`` and its round trip in milliseconds."""
        ident = secrets.token_hex(4)
        answer = self._waiting[ident] = asyncio.get_running_loop().create_future()
        sent = time.perf_counter()
        await self.phone.send(daemon, json.dumps({"id": ident, "tool": tool}))
        done = await asyncio.wait_for(answer, 30)
        return done, (time.perf_counter() - sent) * 1000


async def slice_of(replies: Replies, daemon: str) -> dict[str, Any]:
    """``get_url`` every ``PACE_S`` for ``SLICE_S``: each time (ms), and the CPU seconds of
    this process (the daemon, the relay, the controller) and its Chromium."""
    times = []
    cpu, started = cpu_seconds(os.getpid(), ended=True), time.monotonic()
    while time.monotonic() - started < SLICE_S:
        answer, ms = await replies.command(daemon, "get_url")
        assert answer["success"], answer
        times.append(ms)
        await asyncio.sleep(max(0.0, PACE_S - ms / 1000))
    return {"ms": times, "cpu_s": cpu_seconds(os.getpid(), ended=True) - cpu, "s": SLICE_S}


async def checks_done(daemon: Daemon) -> int:
    """Checks the monitors have run so far (the store's count)."""
    return sum(int(row.state.get("checks", 0)) for row in await daemon.store.watches("monitor"))


async def resume(daemon: Daemon) -> None:
    """Run the monitors again as if they had run all along: a check that fell due while they
    were stopped is skipped to its next time on the same beat (so each slice with monitors
    sees their steady pattern, bursts and all, and ``MONITORS`` checks a minute)."""
    now = time.time()
    for row in await daemon.store.watches("monitor"):
        if row.due < now:
            every = float(row.spec["every"])
            row.due += math.ceil((now - row.due) / every) * every
            await daemon.store.watch_save(row)
    await watches(daemon).start()


def watches(daemon: Daemon) -> Scheduler:
    assert daemon.watches is not None
    return daemon.watches


async def load(docs: str) -> dict[str, Any]:
    """Commands in slices alternating no monitor running and ``MONITORS`` of them."""
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
            async with SdkController([relay.url], keys) as phone, Replies(phone) as replies:
                url = docs + sites.DOC_PAGES["controlflow"]
                await phone.command(me, {"tool": "open", "params": {"url": url}})
                pages = list(sites.DOC_PAGES.values())
                for i in range(MONITORS):
                    params = {"url": f"{docs}{pages[i % len(pages)]}?m={i}", "every": "1m"}
                    made = await phone.command(me, {"tool": "monitor_add", "params": params})
                    assert made["success"], made
                async with asyncio.timeout(FIRST_CHECKS_S):  # every baseline recorded
                    while await checks_done(daemon) < MONITORS:
                        await asyncio.sleep(0.5)
                await watches(daemon).close()
                slices: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
                for n_slice in range(2 * PAIRS):
                    running = n_slice % 2 == 1
                    if running:
                        await resume(daemon)
                    checks = await checks_done(daemon)
                    row = await slice_of(replies, me)
                    row["checks"] = await checks_done(daemon) - checks
                    slices["with" if running else "without"].append(row)
                    if running:
                        await watches(daemon).close()
            return {"monitors": MONITORS, "slices": slices}
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
