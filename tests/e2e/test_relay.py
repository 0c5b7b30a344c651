"""RelayPool against real relays: PyPI's nostr-relay and nostr-sdk's LocalRelay."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
from collections.abc import Callable
from typing import Any

import nostr_sdk
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import InvalidEvent, finalize_event
from nostr_browserd.nostr.relay import RelayPool, Subscription
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.relays import free_port


def note(secret: bytes, content: str, **fields: Any) -> dict[str, Any]:
    return finalize_event({"kind": 1, "content": content, **fields}, secret)


async def next_event(sub: Subscription, timeout: float = 5.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        return await anext(sub)


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def publish_with_nostr_sdk(url: str, event: dict[str, Any]) -> None:
    """Publish through an independent client, as another user's app would."""
    client = nostr_sdk.Client()
    try:
        await client.add_relay(nostr_sdk.RelayUrl.parse(url))
        await client.try_connect(datetime.timedelta(seconds=5))
        output = await client.send_event(nostr_sdk.Event.from_json(json.dumps(event)))
        assert output.success, output.failed
    finally:
        await client.shutdown()


async def test_publish_and_subscribe_through_nostr_relay(nostr_relay_url: str) -> None:
    secret = generate_secret()
    async with RelayPool([nostr_relay_url]) as pool:
        assert await pool.wait_connected(10)
        sub = pool.subscribe([{"authors": [public_key_hex(secret)], "kinds": [1]}])
        assert await sub.wait_eose(5)
        assert sub.eose == {nostr_relay_url}
        for i in range(20):
            event = note(secret, f"hello {i}")
            result = await pool.publish(event, timeout=5)
            assert result.accepted == [nostr_relay_url], result.refused
            assert (await next_event(sub))["id"] == event["id"]
        status = pool.status()[nostr_relay_url]
        assert status.state == status.publish_state == "connected"
        assert status.counts["events"] == 20


async def test_refused_publish_reports_the_relays_reason(nostr_relay_url: str) -> None:
    secret = generate_secret()
    async with RelayPool([nostr_relay_url]) as pool:
        with pytest.raises(InvalidEvent):
            await pool.publish({"kind": 1, "content": "no id, no signature"})
        fine = note(secret, "fine")
        assert (await pool.publish(fine, timeout=5)).ok
        again = await pool.publish(fine, timeout=5)  # nostr-relay: false, "duplicate: exists"
        assert again.accepted == [nostr_relay_url]
        assert again.acks[nostr_relay_url].message.startswith("duplicate:")
        # last: nostr-relay delays everything on a connection by 2 s after an invalid event
        tampered = {**note(secret, "original"), "content": "tampered"}
        result = await pool.publish(tampered, timeout=5)
        assert not result.ok
        assert result.refused[nostr_relay_url].startswith("invalid:")


async def test_publishes_on_local_relay_are_acknowledged_and_delivered_in_order(
    local_relay_factory,
) -> None:
    """(How long that takes is measured by bench/bench_relay.py, not here.)"""
    relay = await local_relay_factory()
    secret = generate_secret()
    async with RelayPool([relay.url]) as pool:
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        assert await pool.wait_connected(5)
        events = [note(secret, f"ping {i}") for i in range(30)]
        for event in events:
            assert (await pool.publish(event, timeout=5)).accepted == [relay.url]
        assert [(await next_event(sub))["id"] for _ in events] == [e["id"] for e in events]


async def test_subscription_survives_a_relay_restart(local_relay_factory) -> None:
    relay = await local_relay_factory()
    secret = generate_secret()
    async with RelayPool([relay.url], backoff_base=0.2, backoff_cap=1.0) as pool:
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        before = note(secret, "before the restart")
        assert (await pool.publish(before, timeout=5)).ok
        assert (await next_event(sub))["id"] == before["id"]

        relay.stop()
        await wait_until(lambda: pool.status()[relay.url].state == "backoff")
        await relay.start()  # same port, empty storage
        while_away = note(secret, "published while the pool was away")
        await publish_with_nostr_sdk(relay.url, while_away)

        assert (await next_event(sub, timeout=10))["id"] == while_away["id"]
        status = pool.status()[relay.url]
        assert status.state == "connected"
        assert status.counts["connects"] >= 2
        after = note(secret, "after the restart")
        assert (await pool.publish(after, timeout=5)).ok
        assert (await next_event(sub))["id"] == after["id"]


async def test_a_stopped_relay_hangs_up_even_on_a_client_it_was_writing_to(
    local_relay_factory,
) -> None:
    """What the restart tests rest on: nostr-sdk's shutdown() missed a connection the relay
    was busy writing to, which lived on, served by the stopped relay (they failed under load
    when one of theirs was that connection)."""
    relay = await local_relay_factory()
    secret = generate_secret()
    async with (
        connect(relay.url, max_queue=1, proxy=None) as slow,
        RelayPool([relay.url]) as pool,
    ):
        await slow.send(json.dumps(["REQ", "all", {"authors": [public_key_hex(secret)]}]))
        for i in range(100):  # ~6 MB the slow reader does not take: the relay's writes wait
            assert (await pool.publish(note(secret, f"{i:060000}"), timeout=5)).ok
        relay.stop()
        async with asyncio.timeout(10):
            with contextlib.suppress(ConnectionClosed):
                async for _ in slow:  # what was sent before the stop, then the hang-up
                    pass


class GatedProxy:
    """A TCP forwarder to ``target`` on 127.0.0.1 that can be shut: while shut, it hangs up
    on every new connection, so a client stays away even when the relay behind it is up."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.open = True
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> GatedProxy:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        for writer in list(self._writers):
            writer.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        self._writers |= {writer, up_writer}
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}


async def test_what_was_published_while_the_pool_was_away_arrives(local_relay_factory) -> None:
    """Kill the relay during a subscription, restart it, publish while the pool is still
    away (the proxy keeps it out), then let it back: the re-sent REQ brings the event."""
    relay = await local_relay_factory()
    secret = generate_secret()
    async with (
        GatedProxy(relay.port) as proxy,
        RelayPool([proxy.url], backoff_base=0.1, backoff_cap=0.5) as pool,
    ):
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        before = note(secret, "before the kill")
        assert (await pool.publish(before, timeout=5)).ok
        assert (await next_event(sub))["id"] == before["id"]

        connects = pool.status()[proxy.url].counts["connects"]
        proxy.open = False
        relay.stop()
        await wait_until(lambda: pool.status()[proxy.url].state != "connected")
        await relay.start()  # same port, empty storage; the pool cannot reach it yet
        while_away = note(secret, "published while the pool was away")
        await publish_with_nostr_sdk(relay.url, while_away)
        status = pool.status()[proxy.url]
        assert status.state != "connected" and status.counts["connects"] == connects

        proxy.open = True
        assert (await next_event(sub, timeout=10))["id"] == while_away["id"]
        assert pool.status()[proxy.url].counts["connects"] > connects


async def test_same_event_from_two_relays_is_delivered_once(local_relay_factory) -> None:
    relays = [await local_relay_factory(), await local_relay_factory()]
    urls = [r.url for r in relays]
    secret = generate_secret()
    async with RelayPool(urls) as pool:
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        first, second = note(secret, "first"), note(secret, "second")
        for event in (first, second):
            assert sorted((await pool.publish(event, timeout=5)).accepted) == sorted(urls)
        assert (await next_event(sub))["id"] == first["id"]
        assert (await next_event(sub))["id"] == second["id"]
        await wait_until(lambda: sum(s.counts["events"] for s in pool.status().values()) == 4)
        assert sum(s.counts["duplicates"] for s in pool.status().values()) == 2


async def test_relay_demanding_auth_serves_after_authenticating(local_relay_factory) -> None:
    relay = await local_relay_factory(nip42=nostr_sdk.LocalRelayBuilderNip42Mode.BOTH)
    signer = KeySigner.generate()
    event = note(signer.secret, "for authenticated readers")
    async with RelayPool([relay.url], auth_signer=signer) as pool:
        result = await pool.publish(event, timeout=5)
        assert result.accepted == [relay.url], result.refused
        sub = pool.subscribe([{"authors": [signer.pubkey]}])
        assert (await next_event(sub))["id"] == event["id"]
        assert await sub.wait_eose(5)
        status = pool.status()[relay.url]
        assert status.authenticated
        assert status.counts["auth"] == 2  # the reading and the publishing connection

    async with RelayPool([relay.url]) as anonymous:  # no signer: refusals come back as they are
        result = await anonymous.publish(note(signer.secret, "anonymous"), timeout=5)
        assert result.refused[relay.url].startswith("auth-required:")
        sub = anonymous.subscribe([{"authors": [signer.pubkey]}])
        assert await sub.wait_eose(5)
        assert sub.closed_by[relay.url].startswith("auth-required:")


async def test_closed_after_eose_for_an_ids_filter_is_harmless(local_relay_factory) -> None:
    relay = await local_relay_factory()
    secret = generate_secret()
    async with RelayPool([relay.url]) as pool:
        stored = note(secret, "stored")
        assert (await pool.publish(stored, timeout=5)).ok
        by_id = pool.subscribe([{"ids": [stored["id"]]}])
        author = public_key_hex(secret)
        live = pool.subscribe([{"authors": [author], "since": stored["created_at"]}])
        assert (await next_event(by_id))["id"] == stored["id"]
        assert await by_id.wait_eose(5)
        await wait_until(lambda: relay.url in by_id.closed_by)  # LocalRelay closes it
        assert (await next_event(live))["id"] == stored["id"]
        later = note(secret, "later")
        assert (await pool.publish(later, timeout=5)).ok
        assert (await next_event(live))["id"] == later["id"]
        assert pool.status()[relay.url].state == "connected"


async def test_a_sink_takes_each_event_once_as_it_arrives_stored_or_live(
    local_relay_factory,
) -> None:
    """The daemon's inbox takes its events this way (no task between the relay and it)."""
    relays = [await local_relay_factory(), await local_relay_factory()]
    urls = [r.url for r in relays]
    secret = generate_secret()
    async with RelayPool(urls) as pool:
        assert await pool.wait_connected(5)
        stored = note(secret, "before the subscription")
        assert sorted((await pool.publish(stored, timeout=5)).accepted) == sorted(urls)
        taken: list[tuple[str, bool]] = []
        sub = pool.subscribe(
            [{"authors": [public_key_hex(secret)]}],
            sink=lambda event, was_stored: taken.append((event["id"], was_stored)),
        )
        assert await sub.wait_eose(5)
        live = note(secret, "after it")
        assert sorted((await pool.publish(live, timeout=5)).accepted) == sorted(urls)
        await wait_until(lambda: sum(s.counts["events"] for s in pool.status().values()) == 4)
        assert taken == [(stored["id"], True), (live["id"], False)]
        closed = asyncio.create_task(sub.wait_closed())
        iterated = asyncio.create_task(anext(sub, None))  # nothing is queued for it
        sub.close()
        assert await asyncio.wait_for(iterated, 5) is None
        await asyncio.wait_for(closed, 5)


async def test_a_sink_that_fails_loses_that_event_and_not_the_connection(
    local_relay_factory, caplog
) -> None:
    relay = await local_relay_factory()
    secret = generate_secret()
    taken: list[str] = []

    def sink(event: dict[str, Any], stored: bool) -> None:
        if event["content"] == "poison":
            raise RuntimeError("a reader's bug")
        taken.append(event["content"])

    async with RelayPool([relay.url]) as pool:
        pool.subscribe([{"authors": [public_key_hex(secret)]}], sink=sink)
        assert await pool.wait_connected(5)
        for content in ("poison", "fine"):
            assert (await pool.publish(note(secret, content), timeout=5)).ok
        await wait_until(lambda: taken == ["fine"])
        assert pool.status()[relay.url].counts["connects"] == 2  # reading, publishing: once each
        assert "its sink failed" in caplog.text


async def test_close_ends_iteration_and_connections(local_relay_factory) -> None:
    relay = await local_relay_factory()
    pool = RelayPool([relay.url])
    await pool.start()
    sub = pool.subscribe([{"kinds": [1]}])
    assert await pool.wait_connected(5)
    consumer = asyncio.create_task(anext(sub, None))
    await pool.close()
    assert await asyncio.wait_for(consumer, 5) is None
    assert pool.status() == {}
    with pytest.raises(RuntimeError):
        await pool.publish(note(generate_secret(), "after close"))


async def test_a_dead_relay_holds_up_neither_publish_nor_eose(local_relay_factory) -> None:
    good = await local_relay_factory()
    dead = f"ws://127.0.0.1:{free_port()}"  # nothing listens there
    async with RelayPool([good.url, dead], backoff_base=0.2) as pool:
        sub = pool.subscribe([{"kinds": [1]}])
        assert await sub.wait_eose(5)
        assert sub.eose == {good.url}
        result = await pool.publish(note(generate_secret(), "hi"), timeout=30)
        assert result.accepted == [good.url]
        assert result.refused[dead].startswith("not connected:")
        assert "ConnectionRefused" in result.refused[dead] or "connecting" in result.refused[dead]

    async with RelayPool([dead], backoff_base=0.2) as alone:  # nobody else: wait it out
        result = await alone.publish(note(generate_secret(), "hi"), timeout=0.5)
        assert result.refused[dead].startswith("timeout: not connected:")


async def test_publish_waits_for_a_relay_that_comes_back(local_relay_factory) -> None:
    relay = await local_relay_factory()
    async with RelayPool([relay.url], backoff_base=0.1, backoff_cap=0.5) as pool:
        assert await pool.wait_connected(5)
        relay.stop()
        await wait_until(lambda: pool.status()[relay.url].publish_state == "backoff")
        publishing = asyncio.create_task(pool.publish(note(generate_secret(), "hi"), timeout=10))
        await asyncio.sleep(0.2)
        assert not publishing.done()
        await relay.start()
        assert (await publishing).accepted == [relay.url]


async def test_relays_can_be_added_and_removed_while_running(local_relay_factory) -> None:
    first, second = await local_relay_factory(), await local_relay_factory()
    secret = generate_secret()
    async with RelayPool([first.url]) as pool:
        sub = pool.subscribe([{"authors": [public_key_hex(secret)]}])
        pool.add_relay(second.url)
        event = note(secret, "to both")
        assert sorted((await pool.publish(event, timeout=5)).accepted) == sorted(pool.urls)
        assert (await next_event(sub))["id"] == event["id"]
        await pool.remove_relay(first.url)
        assert pool.urls == [second.url]
        later = note(secret, "to the second only")
        assert (await pool.publish(later, timeout=5)).accepted == [second.url]
        assert (await next_event(sub))["id"] == later["id"]


async def test_loopback_relays_bypass_a_configured_proxy(local_relay_factory, monkeypatch) -> None:
    relay = await local_relay_factory()
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with RelayPool([relay.url]) as pool:
        assert await pool.wait_connected(5), pool.status()
