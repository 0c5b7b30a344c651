"""Floods: strangers' gift wraps, one controller's queue, and guessed approval codes.

Each case asserts what must hold whatever the machine's speed: the controller is answered,
the signer calls stay within the budget, order is kept, nothing is approved by a guess.
"""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path

import pytest

from nostr_browserd.daemon.store import Store
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

FLOOD = 1000
BUDGET = 600  # strangers' decryptions per minute (and the burst): less than the flood


@pytest.mark.timeout(170)
@pytest.mark.parametrize("signer", ["local", "bunker"])
async def test_a_controller_is_served_through_a_strangers_flood(
    signer, local_relay_factory, tmp_path
):
    relay = (await local_relay_factory()).url
    user = KeySigner.generate()
    strangers = [KeySigner.generate() for _ in range(20)]
    wraps = await stranger_wraps(user.pubkey, FLOOD, strangers)
    wrap_keys = {w["pubkey"]: w["id"] for w in wraps}
    state = tmp_path / "state"
    async with RelayPool([relay]) as pool:
        controller = Controller(pool, user.pubkey)
        serving = functools.partial(
            running_daemon,
            relay,
            state,
            [controller.signer.pubkey],
            signer=signer,
            user=user,
            stranger_budget=BUDGET,
        )
        with DecryptCounter(user.pubkey).installed() as calls:
            async with controller, serving() as target:
                started = time.monotonic()
                # Relays cap what a REQ returns (500 here): the flood comes live.
                flooding = asyncio.create_task(publish_all(pool, wraps))
                await until_taken(target, FLOOD // 2)  # the controller writes mid-flood,
                reply, _ = await controller.command("get_url")
                assert reply["success"], reply
                await flooding
                # and once all of it reached the daemon, the budget spent: the backlog's
                # newest end is reached first
                await until_taken(target, FLOOD)
                for _ in range(2):
                    reply, _ = await controller.command("get_url")
                    assert reply["success"], reply
                elapsed = time.monotonic() - started
        rejected = rejected_among(state, wrap_keys)
        strangers_seen = [p for p in calls.peers if p in wrap_keys]
        # Each stranger's wrap cost one decryption, within the budget and its refill...
        bound = BUDGET + elapsed * BUDGET / 60 + 1
        assert len(strangers_seen) <= bound, (len(strangers_seen), elapsed)
        # ...no stranger's seal was opened (the controller's was: its key is a peer too)...
        assert not {s.pubkey for s in strangers} & set(calls.peers)
        assert controller.signer.pubkey in calls.peers
        # ...and every stranger's wrap that was decrypted is remembered.
        assert rejected == set(strangers_seen)

        # A restart: the relay delivers the flood again; what was rejected costs nothing.
        with DecryptCounter(user.pubkey).installed() as again:
            async with controller, serving() as target:
                await until_taken(target, 500)  # what the relay gives back to a REQ
                reply, _ = await controller.command("get_url")
                assert reply["success"], reply
        assert not rejected & set(again.peers), "a rejected wrap was decrypted again"


def rejected_among(state: Path, wrap_keys: dict[str, str]) -> set[str]:
    """The one-time keys of the wraps the stopped daemon's store remembers as rejected."""
    store = Store(state / "state.sqlite3")
    try:
        return {key for key, event_id in wrap_keys.items() if store.was_rejected(event_id)}
    finally:
        store.close()


async def until_taken(target, count: int) -> None:
    """Until the daemon's relay pool has delivered ``count`` events (bounded wait)."""
    async with asyncio.timeout(60):
        while events_taken(target.daemon) < count:
            await asyncio.sleep(0.05)
