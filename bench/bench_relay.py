"""Request→reply round trip through a LocalRelay, by where the responder publishes its reply.

reference/nostr.md recorded a ~40 ms stall when a responder published its reply on the
connection that carried the request.  This measures, in one run against one relay:

- ``same``: a raw websockets responder replies on its reading connection (the baseline);
- ``separate``: the same responder replies on a second connection of its own;
- ``pool``: the responder is a RelayPool (separate publish connection, TCP_QUICKACK).

The requester is always a RelayPool.  Usage: ``.venv/bin/python -m bench.bench_relay [rounds]``;
``make bench`` runs it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import nostr_sdk
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import event_message, finalize_event, req_message
from nostr_browserd.nostr.relay import RelayPool

Responder = Callable[[str, bytes, str, asyncio.Event], Awaitable[None]]


def reply_to(request: dict, secret: bytes) -> dict:
    return finalize_event({"kind": 1, "content": "pong", "tags": [["e", request["id"]]]}, secret)


async def drain(ws: ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for _ in ws:
            pass


def raw_responder(same_connection: bool) -> Responder:
    """A minimal responder on plain websockets; replies on the reading socket or its own."""

    async def respond(url: str, secret: bytes, topic: str, ready: asyncio.Event) -> None:
        async with connect(url) as reader, connect(url) as writer:
            out = reader if same_connection else writer
            draining = asyncio.create_task(drain(writer))
            await reader.send(req_message("requests", {"kinds": [1], "#t": [topic]}))
            async for raw in reader:
                message = json.loads(raw)
                if message[0] == "EOSE":
                    ready.set()
                elif message[0] == "EVENT":
                    await out.send(event_message(reply_to(message[2], secret)))
            draining.cancel()

    return respond


async def pool_responder(url: str, secret: bytes, topic: str, ready: asyncio.Event) -> None:
    async with RelayPool([url]) as pool:
        sub = pool.subscribe([{"kinds": [1], "#t": [topic]}])
        await pool.wait_connected(5)
        await sub.wait_eose(5)
        ready.set()
        async for request in sub:
            await pool.publish(reply_to(request, secret), timeout=5)


async def round_trips(url: str, responder: Responder, rounds: int) -> list[float]:
    requester, answerer = generate_secret(), generate_secret()
    topic = secrets.token_hex(8)  # each mode's responder sees only its own requests
    ready = asyncio.Event()
    serving = asyncio.create_task(responder(url, answerer, topic, ready))
    await asyncio.wait_for(ready.wait(), 10)
    times = []
    async with RelayPool([url]) as pool:
        replies = pool.subscribe([{"kinds": [1], "authors": [public_key_hex(answerer)]}])
        await pool.wait_connected(5)
        await replies.wait_eose(5)
        for i in range(rounds):
            template = {"kind": 1, "content": f"ping {i}", "tags": [["t", topic]]}
            request = finalize_event(template, requester)
            started = time.perf_counter()
            result = await pool.publish(request, timeout=5)
            assert result.ok, result.refused
            async with asyncio.timeout(5):
                async for reply in replies:
                    if reply["tags"][0][1] == request["id"]:
                        break
            times.append(time.perf_counter() - started)
            await asyncio.sleep(0.01)  # a pause between requests, like a person typing
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    return times


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def main(rounds: int) -> dict[str, list[float]]:
    port = free_port()
    unlimited = nostr_sdk.RateLimit(max_reqs=500, notes_per_minute=1_000_000)
    builder = nostr_sdk.LocalRelayBuilder().addr("127.0.0.1").port(port).rate_limit(unlimited)
    relay = builder.build()
    await relay.run()
    url = f"ws://127.0.0.1:{port}"
    modes = {
        "same": raw_responder(same_connection=True),
        "separate": raw_responder(same_connection=False),
        "pool": pool_responder,
    }
    p50, times = {}, {}
    try:
        print(f"request→reply round trip through LocalRelay, {rounds} rounds per mode")
        for name, responder in modes.items():
            times[name] = await round_trips(url, responder, rounds)
            ms = sorted(t * 1000 for t in times[name])
            p50[name] = statistics.median(ms)
            p90 = ms[int(len(ms) * 0.9)]
            print(f"  {name:9} p50 {p50[name]:7.2f} ms   p90 {p90:7.2f} ms   max {ms[-1]:7.2f} ms")
    finally:
        relay.shutdown()
    print(f"same / separate p50 ratio: {p50['same'] / p50['separate']:.1f}x")
    print(f"same / pool     p50 ratio: {p50['same'] / p50['pool']:.1f}x")
    return times


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
