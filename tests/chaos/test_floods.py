"""Floods: strangers' gift wraps, one controller's queue, and guessed approval codes.

Each case asserts what must hold whatever the machine's speed: the controller is answered,
the signer calls stay within the budget, order is kept, nothing is approved by a guess.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from nostr_browserd.daemon.approvals import CODE_ALPHABET
from nostr_browserd.daemon.store import SqliteStore
from nostr_browserd.dm.inbox import OPENING_AT_ONCE
from nostr_browserd.errors import ErrorCode
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_policy import CODE, CountingHandler
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    seen,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
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
        rejected = await rejected_among(state, wrap_keys)
        strangers_seen = [p for p in calls.peers if p in wrap_keys]
        # Each stranger's wrap cost one decryption, within the budget and its refill...
        bound = BUDGET + elapsed * BUDGET / 60 + 1
        assert len(strangers_seen) <= bound, (len(strangers_seen), elapsed)
        # ...no stranger's seal was opened (the controller's was: its key is a peer too)...
        assert not {s.pubkey for s in strangers} & set(calls.peers)
        assert controller.signer.pubkey in calls.peers
        # ...and every stranger's wrap that was decrypted is remembered (but those still being
        # opened when the daemon stopped).
        assert rejected <= set(strangers_seen)
        assert len(set(strangers_seen) - rejected) <= OPENING_AT_ONCE

        # A restart: the relay delivers the flood again; what was rejected costs nothing.
        with DecryptCounter(user.pubkey).installed() as again:
            async with controller, serving() as target:
                await until_taken(target, 500)  # what the relay gives back to a REQ
                reply, _ = await controller.command("get_url")
                assert reply["success"], reply
        assert not rejected & set(again.peers), "a rejected wrap was decrypted again"


async def rejected_among(state: Path, wrap_keys: dict[str, str]) -> set[str]:
    """The one-time keys of the wraps the stopped daemon's store remembers as rejected."""
    store = SqliteStore(state / "state.sqlite3")
    try:
        known = await store.known(wrap_keys.values())
        return {key for key, event_id in wrap_keys.items() if event_id in known}
    finally:
        await store.close()


async def until_taken(target, count: int) -> None:
    """Until the daemon's relay pool has delivered ``count`` events (bounded wait)."""
    async with asyncio.timeout(60):
        while events_taken(target.daemon) < count:
            await asyncio.sleep(0.05)


@pytest.mark.timeout(170)
async def test_200_queued_commands_run_in_order_and_hold_no_one_else_up(
    nostr_relay_url, start_daemon
):
    async with (
        SdkController([nostr_relay_url]) as busy,
        SdkController([nostr_relay_url]) as other,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[busy.npub, other.npub],
            browser={"queue_size": 200},
        )
        me = await daemon_pubkey(daemon)
        last = ""
        for i in range(200):
            command = {"id": f"b{i:03}", "tool": "wait", "params": {"ms": 50}}
            last = await busy.send(me, json.dumps(command))
        await wait_until(lambda: seen(daemon.store, last))  # all 200 reached the daemon
        answer = await other.command(me, {"tool": "get_url"})
        assert answer["success"], answer
        # The other controller was answered while the busy one's queue still waited.
        done = [e.request_id for e in await daemon.store.recent(300) if e.controller == busy.pubkey]
        assert len(done) < 200
        assert daemon.dispatcher.status()["queued"].get(busy.pubkey, 0) > 0

        async def all_ran() -> bool:
            return sum(e.controller == busy.pubkey for e in await daemon.store.recent(300)) == 200

        await wait_until(all_ran, timeout=120)
        ran = [e for e in reversed(await daemon.store.recent(300)) if e.controller == busy.pubkey]
        assert [e.request_id for e in ran] == [f"b{i:03}" for i in range(200)], "in order"
        assert all(e.outcome == "ok" for e in ran)


async def test_100_approve_guesses_approve_nothing_and_the_approver_is_told(
    nostr_relay_url, start_daemon
):
    handler = type("Counting", (CountingHandler,), {"hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/counted"
    try:
        async with (
            SdkController([nostr_relay_url]) as agent,
            SdkController([nostr_relay_url]) as phone,
        ):
            daemon = await start_daemon(
                [nostr_relay_url],
                controllers=[{"pubkey": agent.npub, "name": "agent", "approver": phone.npub}],
            )
            me = await daemon_pubkey(daemon)
            opening = asyncio.create_task(
                agent.command(me, {"tool": "open", "params": {"url": url}}, timeout=120)
            )
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            code = CODE.search(ask.content)[1]
            guesses = {code} | {"".join(random.choices(CODE_ALPHABET, k=6)) for _ in range(200)}
            for guess in [*sorted(guesses - {code})[:99], code]:  # the right code among them
                await agent.send(me, f"approve {guess}")
            notices = []
            async with asyncio.timeout(60):
                while len(notices) < 3:
                    notices += [r.content for r in await phone.poll() if r.sender == me]
                    await asyncio.sleep(0.05)
            # (a relay lists gift wraps by their created_at, which NIP-59 randomises)
            assert sorted(n.split(" code ", 1)[1].split(" time")[0] for n in notices) == [
                "1",
                "10",
                "100",
            ]
            assert not opening.done() and handler.hits == [], "nothing was approved"
            await phone.send(me, f"deny {code}")
            denied = await opening
            assert denied["error"]["code"] == ErrorCode.DENIED
            assert handler.hits == []
    finally:
        server.shutdown()
        server.server_close()
