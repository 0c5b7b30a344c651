"""A controller's latency while 1,000 strangers' gift wraps arrive, with a local key and a bunker.

Issue 9 §1.4: every stranger's wrap used to cost two signer calls (two remote round trips with
a bunker), forever.  In one run, against one loopback LocalRelay, for each signer (the key in
the daemon, or held by our own bunker on the same relay) this measures:

- ``baseline``: ``get_url`` round trips of one controller, nothing else going on;
- ``flood``: the same round trips while 1,000 wraps from 20 strangers are published live and
  the daemon works through them;

and reports the p50 and the worst round trip, their ratio to the baseline, and the signer
calls the flood cost (decryptions with the daemon's key, counted where the key is: in the
daemon, or in the bunker).  The stranger budget is the default (1,200 a minute), so the whole
flood is absorbed; a second flood run with a budget of 300 shows the trade when a flood is
bigger than the budget.

Usage: ``.venv/bin/python bench/bench_flood.py [rounds]`` (default 20).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nostr_browserd.dm.inbox import STRANGER_BUDGET
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.flood import (
    Controller,
    DecryptCounter,
    events_taken,
    publish_all,
    running_daemon,
    stranger_wraps,
)
from tests.fixtures.relays import LocalRelayHandle, free_port

FLOOD = 1000


async def round_trips(controller: Controller, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        reply, took = await controller.command("get_url", timeout=600)
        assert reply["success"], reply
        times.append(took * 1000)
    return times


async def one_signer(signer: str, budget: int, rounds: int, workdir: Path) -> dict[str, float]:
    relay = LocalRelayHandle(free_port(), None)
    await relay.start()
    user = KeySigner.generate()
    strangers = [KeySigner.generate() for _ in range(20)]
    wraps = await stranger_wraps(user.pubkey, FLOOD, strangers)
    wrap_keys = {w["pubkey"] for w in wraps}
    try:
        async with RelayPool([relay.url]) as pool:
            controller = Controller(pool, user.pubkey)
            with DecryptCounter(user.pubkey).installed() as calls:
                async with (
                    controller,
                    running_daemon(
                        relay.url,
                        workdir / f"{signer}-{budget}",
                        [controller.signer.pubkey],
                        signer=signer,
                        user=user,
                        stranger_budget=budget,
                    ) as target,
                ):
                    await round_trips(controller, 3)  # warm up: the browser session opens
                    baseline = await round_trips(controller, rounds)
                    before = len(calls.peers)
                    taken = events_taken(target.daemon)
                    started = time.perf_counter()
                    flooding = asyncio.create_task(publish_all(pool, wraps))
                    flood = await round_trips(controller, rounds)
                    await flooding
                    while events_taken(target.daemon) < taken + FLOOD:
                        await asyncio.sleep(0.05)
                    flood += await round_trips(controller, 3)  # with the flood all delivered
                    elapsed = time.perf_counter() - started
                    during = calls.peers[before:]
    finally:
        relay.stop()
    strangers_cost = sum(1 for p in during if p in wrap_keys)
    return {
        "baseline_p50": statistics.median(baseline),
        "flood_p50": statistics.median(flood),
        "flood_max": max(flood),
        "signer_calls": len(during),
        "strangers_calls": strangers_cost,
        "seconds": elapsed,
    }


async def main(rounds: int) -> None:
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(s, b) for b in (STRANGER_BUDGET, 300) for s in ("local", "bunker")]
        for signer, budget in runs:
            r = await one_signer(signer, budget, rounds, Path(tmp))
            print(
                f"{signer:6} budget {budget:4}/min: baseline p50 {r['baseline_p50']:7.1f} ms;"
                f" during the flood p50 {r['flood_p50']:8.1f} ms"
                f" ({r['flood_p50'] / r['baseline_p50']:5.1f}x), worst {r['flood_max']:8.1f} ms;"
                f" signer calls {r['signer_calls']} ({r['strangers_calls']} for"
                f" {FLOOD} strangers' wraps, at most one each) in {r['seconds']:.1f} s"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
