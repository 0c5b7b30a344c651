"""RelayPool against relays that misbehave: tiny scripted websockets servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from nostr_browserd.nostr import nip59
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import finalize_event, matches
from nostr_browserd.nostr.nip01 import parse_relay_message as parse
from nostr_browserd.nostr.relay import (
    MAX_AUTH_ATTEMPTS,
    OUTBOX_SIZE,
    SINCE_MARGIN,
    RelayPool,
    connection,
)
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_relay import next_event, note, wait_until

Script = Callable[["ScriptedRelay", ServerConnection], Awaitable[None]]


class ScriptedRelay:
    """A websockets server whose every connection runs ``script``; it records what it got."""

    def __init__(self, script: Script, **serve_options: Any) -> None:
        self.script = script
        self.serve_options = serve_options
        self.received: list[list[Any]] = []
        self.connections = 0

    async def __aenter__(self) -> ScriptedRelay:
        self.server = await serve(self._handle, "127.0.0.1", 0, **self.serve_options)
        self.url = f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        with contextlib.suppress(ConnectionClosed):  # the pool left: the script ends here
            await self.script(self, ws)

    async def frames(self, ws: ServerConnection):
        """The client's frames, parsed and recorded."""
        async for raw in ws:
            frame = json.loads(raw)
            self.received.append(frame)
            yield frame

    def reqs(self) -> list[list[Any]]:
        return [f for f in self.received if f[0] == "REQ"]


def send(ws: ServerConnection, *frame: Any) -> Awaitable[None]:
    return ws.send(json.dumps(list(frame)))


def answering_every_req_with(*events: dict[str, Any]) -> Script:
    """A script for relays that answer every REQ with ``events``, then EOSE."""

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        async for frame in relay.frames(ws):
            if frame[0] == "REQ":
                for event in events:
                    await send(ws, "EVENT", frame[1], event)
                await send(ws, "EOSE", frame[1])

    return script


async def test_hostile_relays_cannot_stall_or_crash_the_pool(local_relay_factory) -> None:
    garbage = [
        "not json",
        "{}",
        "[]",
        "[1, 2, 3]",
        '["EVENT"]',
        '["OK", 1, 2, 3]',
        '["EOSE", {"a": 1}]',
        '["AUTH", {}]',
        '["NOTICE"]',
        '["EVENT", "sub", "not an event"]',
    ]

    async def spew_garbage(relay: ScriptedRelay, ws: ServerConnection) -> None:
        for raw in garbage:
            await ws.send(raw)
        async for frame in relay.frames(ws):
            if frame[0] == "REQ":  # a forged event for the subscription, then silence
                forged = {**note(generate_secret(), "forged"), "content": "changed"}
                await send(ws, "EVENT", frame[1], forged)
            # EVENT frames are never answered with OK

    async def huge_frames(relay: ScriptedRelay, ws: ServerConnection) -> None:
        await ws.send('["NOTICE", "' + "x" * (2 << 20) + '"]')
        await ws.wait_closed()

    async def black_hole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts TCP, never completes the websocket handshake
        writer.close()

    good = await local_relay_factory()
    hole = await asyncio.start_server(black_hole, "127.0.0.1", 0)
    hole_url = f"ws://127.0.0.1:{hole.sockets[0].getsockname()[1]}"
    async with (
        ScriptedRelay(spew_garbage) as bad,
        ScriptedRelay(huge_frames) as huge,
        RelayPool(
            [good.url, bad.url, huge.url, hole_url],
            backoff_base=0.1,
            backoff_cap=0.5,
            open_timeout=1,
            max_frame=1 << 20,
        ) as pool,
    ):
        secret = generate_secret()
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        event = note(secret, "through the good relay")
        publishing = asyncio.create_task(pool.publish(event, timeout=1))
        assert (await next_event(sub))["id"] == event["id"]
        result = await publishing
        assert result.accepted == [good.url]
        assert result.refused[bad.url].startswith("timeout:")  # connected, never answers
        for url in (huge.url, hole_url):  # they never stay connected
            assert result.refused[url].startswith(("not connected:", "timeout:")), result.refused

        await wait_until(lambda: pool.status()[bad.url].counts["bad_messages"] >= len(garbage))
        status = pool.status()
        assert status[bad.url].counts["invalid"] >= 1
        assert "too big" in (status[huge.url].last_error or "")
        assert status[huge.url].counts["connects"] >= 1
        assert status[hole_url].state != "connected"
        assert status[good.url].state == status[good.url].publish_state == "connected"
    hole.close()
    await hole.wait_closed()


async def test_a_relay_that_stops_reading_costs_only_timeouts(local_relay_factory) -> None:
    async def stops_reading(relay: ScriptedRelay, ws: ServerConnection) -> None:
        await ws.wait_closed()  # with max_queue=1 the server soon stops reading the socket

    good = await local_relay_factory()
    async with (
        ScriptedRelay(stops_reading, max_queue=1, close_timeout=0.5) as deaf,
        RelayPool([good.url, deaf.url], ping_interval=1, backoff_base=5) as pool,
    ):
        assert await pool.wait_connected(5)
        secret = generate_secret()
        events = [note(secret, secrets.token_hex(16384)) for _ in range(20)]
        results = await asyncio.gather(*(pool.publish(e, timeout=1.5) for e in events))
        assert all(r.accepted == [good.url] for r in results)
        assert all(r.refused[deaf.url].startswith("timeout:") for r in results)
        await wait_until(lambda: "ping timeout" in (pool.status()[deaf.url].last_error or ""))
        assert pool.status()[good.url].publish_state == "connected"


async def test_invalid_and_unmatched_events_are_dropped_and_counted() -> None:
    secret = generate_secret()
    valid = note(secret, "valid")
    tampered = {**note(secret, "signed"), "content": "tampered"}
    other_kind = finalize_event({"kind": 7, "content": "+"}, secret)
    script = answering_every_req_with(tampered, other_kind, valid)

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        sub = pool.subscribe([{"kinds": [1]}])
        assert await next_event(sub) == valid  # the two before it never reached us
        counts = pool.status()[relay.url].counts
        assert (counts["invalid"], counts["unmatched"], counts["events"]) == (1, 1, 2)


async def test_a_badly_signed_gift_wrap_is_dropped_and_does_not_shadow_the_good_copy() -> None:
    """The pool verifies a gift wrap's signature before de-duplicating it, so the inbox need
    not verify it again: a copy with a bad signature (same id) never arrives, and the good one
    after it still does."""
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "get url", [["p", bob.pubkey]])
    wrap = await nip59.wrap(rumor, alice, bob.pubkey)
    bad = {**wrap, "sig": wrap["sig"][::-1]}
    script = answering_every_req_with(bad, wrap)

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        sub = pool.subscribe([{"kinds": [1059], "#p": [bob.pubkey]}], advance_since=False)
        assert await next_event(sub) == wrap
        assert pool.status()[relay.url].counts["invalid"] == 1


async def test_a_reader_verifying_signatures_gets_one_unverified_copy_and_the_good_one() -> None:
    """``unverified`` kinds (the daemon's inbox's gift wraps, verified where the seal is opened):
    the first copy of an id comes through with its id checked and its signature not; a later
    copy with another signature is verified here, so a badly signed copy that came first cannot
    shadow the good one, and further bad copies, or a wrap altered under its id, never come."""
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "get url", [["p", bob.pubkey]])
    wrap = await nip59.wrap(rumor, alice, bob.pubkey)
    bad = {**wrap, "sig": wrap["sig"][::-1]}
    worse = {**wrap, "sig": "0" * 128}
    altered = {**wrap, "tags": [["p", bob.pubkey], ["expiration", "1"]]}  # same id, not its hash
    script = answering_every_req_with(bad, altered, worse, wrap, bad, wrap)

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        filters = [{"kinds": [1059], "#p": [bob.pubkey]}]
        sub = pool.subscribe(filters, advance_since=False, unverified=frozenset({1059}))
        assert await next_event(sub) == bad  # unverified: the reader checks it
        assert await next_event(sub) == wrap
        assert await sub.wait_eose(5)
        counts = pool.status()[relay.url].counts
        assert (counts["invalid"], counts["duplicates"]) == (2, 2)  # altered, worse; bad, wrap


async def test_a_copy_passed_on_already_is_told_from_its_text_and_any_other_is_parsed(
    monkeypatch,
) -> None:
    """Every relay sends every event: a copy of one passed on already, written as relays write
    it (id first, sig last, no spaces), is dropped before its JSON is parsed, only when its
    signature is one passed on; a copy with another signature, or written another way, is
    parsed and judged as before."""
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "get url", [["p", bob.pubkey]])
    made = await nip59.wrap(rumor, alice, bob.pubkey)
    wrap = {
        key: made[key] for key in ("id", "pubkey", "created_at", "kind", "tags", "content", "sig")
    }
    bad = {**wrap, "sig": wrap["sig"][::-1]}
    reordered = dict(reversed(wrap.items()))
    parsed = []
    monkeypatch.setattr(
        connection, "parse_relay_message", lambda raw: parsed.append(raw) or parse(raw)
    )

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        async for frame in relay.frames(ws):
            if frame[0] == "REQ":
                for event in (bad, wrap, wrap, bad, reordered):
                    await ws.send(json.dumps(["EVENT", frame[1], event], separators=(",", ":")))
                await send(ws, "EOSE", frame[1])

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        filters = [{"kinds": [1059], "#p": [bob.pubkey]}]
        sub = pool.subscribe(filters, advance_since=False, unverified=frozenset({1059}))
        assert await next_event(sub) == bad  # unverified: the reader checks it
        assert await next_event(sub) == wrap  # another signature: parsed, verified, passed on
        assert await sub.wait_eose(5)
        counts = pool.status()[relay.url].counts
    assert (counts["events"], counts["duplicates"]) == (5, 3)
    events = [json.loads(raw)[2] for raw in parsed if raw.startswith('["EVENT"')]
    assert events == [bad, wrap, reordered], "the second wrap and bad were not parsed"


async def test_reconnect_resends_subscriptions_with_since_advanced() -> None:
    secret = generate_secret()
    old = note(secret, "old", created_at=int(time.time()) - 1000)
    future = note(secret, "from the future", created_at=int(time.time()) + 10_000)
    sent = {"advancing": old, "fixed": old, "future": future}
    before = int(time.time())

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        first_connection = relay.connections == 1
        async for frame in relay.frames(ws):
            if frame[0] == "REQ":
                if first_connection:
                    await send(ws, "EVENT", frame[1], sent[frame[1]])
                await send(ws, "EOSE", frame[1])
                if first_connection and len(relay.reqs()) == len(sent):
                    await ws.close()

    async with (
        ScriptedRelay(script) as relay,
        RelayPool([relay.url], backoff_base=0.05, backoff_cap=0.2) as pool,
    ):
        subs = {
            name: pool.subscribe(
                [{"kinds": [1], "since": 100}], sub_id=name, advance_since=name != "fixed"
            )
            for name in sent
        }
        for name, sub in subs.items():
            assert (await next_event(sub))["id"] == sent[name]["id"]
        await wait_until(lambda: len(relay.reqs()) == 2 * len(sent))
        resent = {req[1]: req[2] for req in relay.reqs()[len(sent) :]}

    assert resent["advancing"] == {"kinds": [1], "since": old["created_at"] - SINCE_MARGIN}
    assert resent["fixed"] == {"kinds": [1], "since": 100}
    # an event dated in the future must not make the pool skip the present
    assert before - SINCE_MARGIN <= resent["future"]["since"] <= time.time() - SINCE_MARGIN


async def test_an_event_is_stored_until_its_relays_eose_again_after_a_reconnect() -> None:
    secret = generate_secret()
    sent = [note(secret, name) for name in ("stored", "live", "stored again", "live again")]

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        async for frame in relay.frames(ws):
            if frame[0] == "REQ":
                first = len(relay.reqs()) == 1
                stored, live = sent[:2] if first else sent[2:]
                await send(ws, "EVENT", frame[1], stored)
                await send(ws, "EOSE", frame[1])
                await send(ws, "EVENT", frame[1], live)
                if first:
                    await ws.close()

    async with (
        ScriptedRelay(script) as relay,
        RelayPool([relay.url], backoff_base=0.05, backoff_cap=0.2) as pool,
    ):
        sub = pool.subscribe([{"kinds": [1]}], advance_since=False)
        got = []
        for _ in sent:
            event = await next_event(sub)
            got.append((event["content"], sub.stored))

    # what came before the EOSE of each REQ may have been handled before: the inbox looks it up
    assert got == [("stored", True), ("live", False), ("stored again", True), ("live again", False)]


async def test_slow_consumer_loses_events_not_memory() -> None:
    secret = generate_secret()
    events = [note(secret, str(i)) for i in range(10)]
    script = answering_every_req_with(*events)

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        sub = pool.subscribe([{"kinds": [1]}], queue_size=3)
        assert await sub.wait_eose(5)
        sub.close()
        # the oldest make room: the newest (a command behind a flood) is what gets through
        assert [e["id"] async for e in sub] == [e["id"] for e in events[-3:]]
        assert sub.dropped == 7


async def test_dedup_memory_is_bounded() -> None:
    secret = generate_secret()
    a, b, c = (note(secret, x) for x in "abc")
    script = answering_every_req_with(a, b, b, c, a)

    async with ScriptedRelay(script) as relay, RelayPool([relay.url]) as pool:
        sub = pool.subscribe([{"kinds": [1]}], dedup_size=2)
        assert await sub.wait_eose(5)
        sub.close()
        # the second `b` is a duplicate; `a` again, after b and c pushed it out, is not
        assert [e["content"] async for e in sub] == ["a", "b", "c", "a"]


async def test_a_failing_signer_does_not_take_the_connection_down() -> None:
    class BrokenSigner(KeySigner):
        async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("the bunker is offline")

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        await send(ws, "AUTH", "challenge-1")
        async for frame in relay.frames(ws):
            if frame[0] == "EVENT":
                await send(ws, "OK", frame[1]["id"], True, "")

    signer = BrokenSigner(generate_secret())
    async with (
        ScriptedRelay(script) as relay,
        RelayPool([relay.url], auth_signer=signer) as pool,
    ):
        assert (await pool.publish(note(signer.secret, "hi"), timeout=5)).ok
        await wait_until(lambda: "bunker is offline" in (pool.status()[relay.url].last_error or ""))
        assert pool.status()[relay.url].state == "connected"
        assert relay.connections == 2


def test_filter_matching() -> None:
    secret = generate_secret()
    event = finalize_event({"kind": 4, "content": "", "tags": [["p", "ab" * 32]]}, secret)
    assert matches({"kinds": [4], "#p": ["ab" * 32], "authors": [event["pubkey"]]}, event)
    assert matches({"since": event["created_at"], "until": event["created_at"]}, event)
    assert not matches({"kinds": [1]}, event)
    assert not matches({"#p": ["cd" * 32]}, event)
    assert not matches({"ids": ["00" * 32]}, event)
    assert not matches({"since": event["created_at"] + 1}, event)


async def test_bad_arguments_get_clear_errors() -> None:
    pool = RelayPool()
    with pytest.raises(ValueError, match="relay URL"):
        pool.add_relay("http://example.com")
    with pytest.raises(ValueError, match="filters"):
        pool.subscribe([])
    pool.subscribe([{"kinds": [1]}], sub_id="x")
    with pytest.raises(ValueError, match="in use"):
        pool.subscribe([{"kinds": [1]}], sub_id="x")
    with pytest.raises(RuntimeError, match="start"):
        await pool.publish(note(generate_secret(), "not started"))
    await pool.close()


async def test_auth_challenges_are_answered_only_a_few_times_per_connection() -> None:
    class CountingSigner(KeySigner):
        calls = 0

        async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
            self.calls += 1
            await asyncio.sleep(0.01)  # a remote signer takes a moment
            return await super().sign_event(template)

    async def script(relay: ScriptedRelay, ws: ServerConnection) -> None:
        for i in range(10):  # never accepts any AUTH, keeps asking
            await send(ws, "AUTH", f"challenge-{i}")
            await asyncio.sleep(0.02)
        await ws.wait_closed()

    signer = CountingSigner(generate_secret())
    async with ScriptedRelay(script) as relay, RelayPool([relay.url], auth_signer=signer) as pool:
        await wait_until(lambda: "keeps asking" in (pool.status()[relay.url].last_error or ""))
        assert signer.calls == 2 * MAX_AUTH_ATTEMPTS  # the reading and the publishing connection


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
hex64 = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
almost_events = st.fixed_dictionaries(
    {
        "id": hex64 | json_values,
        "pubkey": hex64 | json_values,
        "created_at": st.integers() | json_values,
        "kind": st.integers(0, 65535) | json_values,
        "tags": st.lists(st.lists(st.text(), max_size=3), max_size=3) | json_values,
        "content": st.text() | json_values,
        "sig": st.text(alphabet="0123456789abcdef", min_size=128, max_size=128) | json_values,
    }
)
relay_messages = st.one_of(
    json_values,
    st.builds(lambda event: ["EVENT", "sub", event], almost_events),
    st.builds(
        lambda verb, args: [verb, *args],
        st.sampled_from(["EVENT", "EOSE", "CLOSED", "OK", "NOTICE", "AUTH", "COUNT"]),
        st.lists(st.one_of(st.just("sub"), json_values), max_size=4),
    ),
)


@given(messages=st.lists(relay_messages, max_size=20))
@settings(max_examples=300, deadline=None)
def test_any_relay_message_is_handled_without_error(messages: list[Any]) -> None:
    pool = RelayPool(["ws://127.0.0.1:9"])
    pool.subscribe([{}], sub_id="sub")
    reader = pool._relays["ws://127.0.0.1:9"].reader
    for message in messages:
        reader._handle(json.dumps(message))
    reader._handle(b"\xff\xfe not even UTF-8")
    reader._handle("[" * 60000)  # RecursionError in json.loads: must be one bad message
    counts = pool.status()["ws://127.0.0.1:9"].counts
    assert counts["events"] == 0  # nothing unsigned gets through
    assert counts["bad_messages"] >= 1


async def test_resubscribing_to_a_relay_that_stopped_reading_does_not_hang() -> None:
    async def stops_reading(relay: ScriptedRelay, ws: ServerConnection) -> None:
        await ws.wait_closed()

    async with ScriptedRelay(stops_reading, max_queue=1, close_timeout=0.5) as deaf:
        pool = RelayPool([deaf.url], ping_interval=1, backoff_base=0.2, backoff_cap=0.5)
        for _ in range(2 * OUTBOX_SIZE):  # more REQs than fit while the relay is not reading
            pool.subscribe([{"ids": [secrets.token_hex(32) for _ in range(600)]}])
        async with pool:  # the reading connection must give up and reconnect, not hang
            await wait_until(lambda: pool.status()[deaf.url].counts["connects"] >= 3, 20)
            print(f"\nlast error: {pool.status()[deaf.url].last_error}")
