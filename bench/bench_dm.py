"""A NIP-17 ``get_url`` round trip through a loopback LocalRelay: the daemon vs minimal responders.

What the issue asks: the daemon within 1.2× of a minimal responder, i.e. the replay guard, the
audit log, the dispatcher and the browser call must not add tens of milliseconds.  In one run,
against one relay, with one requester (nostr-sdk's Rust crypto for its own wrap and unwrap, our
RelayPool for transport), this measures:

- ``sdk``: a minimal responder on nostr-sdk crypto (the 4.3 ms floor of reference/nostr.md);
- ``ours``: the same minimal responder on our own primitives (nip17 + RelayPool), no replay
  guard, audit or dispatcher, answering from ``page.url`` of a real Chromium page;
- ``tool``: that responder running the real ``get_url`` tool (``protocol.run`` on a Session,
  which also reads the page title over CDP for every result);
- ``daemon``: the real Daemon (inbox, SQLite replay guard, dispatcher, tool registry,
  Playwright session, audit, outbox), logged in with a local key;
- ``contextvm``: the same daemon and tool over ContextVM (MCP's ``tools/call`` in a CEP-4 gift
  wrap, answered as MCP content), from ``mcp --to``'s own ContextVM client.

Usage: ``.venv/bin/python -m bench.bench_dm [rounds]`` (default 200); ``make bench`` runs it too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import nostr_sdk as sdk

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run
from nostr_browserd.daemon.app import Daemon
from nostr_browserd.daemon.config import Config
from nostr_browserd.mcp.contextvm_remote import ContextVmBackend
from nostr_browserd.nostr import nip17
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner

from .sites import SANDBOX, free_port

Responder = Callable[[str, asyncio.Event], Awaitable[None]]


def answer(request_text: str, url: str) -> str:
    request = json.loads(request_text)
    return json.dumps({"id": request.get("id"), "success": True, "data": {"url": url}})


def sdk_responder(keys: sdk.Keys) -> Responder:
    """Unwrap and wrap with nostr-sdk; our RelayPool moves the events."""

    async def serve(url: str, ready: asyncio.Event) -> None:
        me = keys.public_key().to_hex()
        async with RelayPool([url]) as pool:
            sub = pool.subscribe([{"kinds": [1059], "#p": [me], "limit": 0}], advance_since=False)
            await pool.wait_connected(5)
            await sub.wait_eose(5)
            ready.set()
            async for wrap in sub:
                gift = sdk.UnwrappedGift.from_gift_wrap(keys, sdk.Event.from_json(json.dumps(wrap)))
                text = answer(gift.rumor().content(), "about:blank")
                reply = sdk.nip17_make_private_msg(keys, gift.sender(), text)
                await pool.publish(json.loads(reply.as_json()), timeout=5)

    return serve


def our_responder(signer: KeySigner, answer_for: Callable[[str], Awaitable[str]]) -> Responder:
    """Our nip17 and RelayPool around ``answer_for``; no replay guard, audit or dispatcher."""

    async def serve(url: str, ready: asyncio.Event) -> None:
        async with RelayPool([url]) as pool:
            sub = pool.subscribe(
                [{"kinds": [1059], "#p": [signer.pubkey], "limit": 0}], advance_since=False
            )
            await pool.wait_connected(5)
            await sub.wait_eose(5)
            ready.set()
            async for wrap in sub:
                opened = await nip17.open_dm(wrap, signer)
                text = await answer_for(opened.rumor["content"])
                wraps = await nip17.make_dm(
                    signer, [opened.sender], text, reply_to=opened.rumor["id"], copy_to_self=False
                )
                await pool.publish(wraps[0][1], timeout=5)

    return serve


class Requester:
    """A controller on nostr-sdk crypto: sends ``get_url`` to one responder, times the reply."""

    def __init__(self, pool: RelayPool, responder_pubkey: str, keys: sdk.Keys | None = None):
        self.keys = keys or sdk.Keys.generate()
        self.target = sdk.PublicKey.parse(responder_pubkey)
        me = self.keys.public_key().to_hex()
        mine = {"kinds": [1059], "#p": [me], "limit": 0}
        self.replies = pool.subscribe([mine], advance_since=False)
        self.pool, self.run, self.times = pool, secrets.token_hex(4), []

    async def round_trip(self, i: int) -> None:
        # A unique id: the same text in the same second would be (rightly) taken for a replay.
        request_id = f"{self.run}-{i}"
        request = json.dumps({"id": request_id, "tool": "get_url"})
        started = time.perf_counter()
        wrap = sdk.nip17_make_private_msg(self.keys, self.target, request)
        result = await self.pool.publish(json.loads(wrap.as_json()), timeout=5)
        assert result.ok, result.refused
        async with asyncio.timeout(10):
            async for event in self.replies:
                try:
                    gift = sdk.UnwrappedGift.from_gift_wrap(
                        self.keys, sdk.Event.from_json(json.dumps(event))
                    )
                except sdk.NostrSdkError:  # a ContextVM answer to the same key: not a DM
                    continue
                if json.loads(gift.rumor().content()).get("id") == request_id:
                    break
        self.times.append(time.perf_counter() - started)


class ContextVmRequester:
    """The controller's key over ContextVM: ``tools/call get_url``, timed to its result."""

    def __init__(self, url: str, daemon: str, keys: sdk.Keys) -> None:
        signer = KeySigner(bytes.fromhex(keys.secret_key().to_hex()))
        self.backend = ContextVmBackend(signer, daemon, [url])
        self.times: list[float] = []

    async def round_trip(self, i: int) -> None:
        started = time.perf_counter()
        result = await self.backend.call("get_url", {}, _no_progress)
        assert not isinstance(result, dict) and not result.is_error, result
        self.times.append(time.perf_counter() - started)


async def _no_progress(done: float, total: float | None, message: str) -> None:
    return None


async def start_responder(url: str, serve: Responder) -> asyncio.Task[None]:
    ready = asyncio.Event()
    task = asyncio.create_task(serve(url, ready))
    await asyncio.wait_for(ready.wait(), 10)
    return task


def daemon_config(url: str, state: str, controller: str) -> Config:
    return Config.model_validate(
        {
            "nostr": {
                "relays": [url],
                "embedded_relay": False,
                "controllers": [controller],
                "dm": ["nip17"],
            },
            "state": {"dir": state},
            "local": {"enabled": False},
            "browser": {"sandbox": SANDBOX},
        }
    )


def report(name: str, seconds: list[float]) -> float:
    ms = sorted(s * 1000 for s in seconds)
    p50, p90 = statistics.median(ms), ms[int(len(ms) * 0.9)]
    print(f"  {name:9} p50 {p50:6.2f} ms   p90 {p90:6.2f} ms   max {ms[-1]:7.2f} ms")
    return p50


async def main(rounds: int) -> dict[str, list[float]]:
    logging.basicConfig(level=logging.ERROR)
    port = free_port()
    unlimited = sdk.RateLimit(max_reqs=500, notes_per_minute=1_000_000)
    relay = sdk.LocalRelayBuilder().addr("127.0.0.1").port(port).rate_limit(unlimited).build()
    await relay.run()
    url = f"ws://127.0.0.1:{port}"
    browsers = BrowserPool(BrowserConfig(sandbox=SANDBOX))
    tasks: list[asyncio.Task[None]] = []
    daemon: Daemon | None = None
    with tempfile.TemporaryDirectory() as state:
        try:
            await browsers.start()
            page = (await browsers.session("ours")).page
            session = await browsers.session("tool")

            async def from_page(content: str) -> str:
                return answer(content, page.url)

            async def from_tool(content: str) -> str:
                return json.dumps(await run(REGISTRY, session, parse_request(content, REGISTRY)))

            keys, ours, tool = sdk.Keys.generate(), KeySigner.generate(), KeySigner.generate()
            tasks.append(await start_responder(url, sdk_responder(keys)))
            tasks.append(await start_responder(url, our_responder(ours, from_page)))
            tasks.append(await start_responder(url, our_responder(tool, from_tool)))
            controller = sdk.Keys.generate()
            daemon = Daemon(daemon_config(url, state, controller.public_key().to_hex()))
            await daemon.start()
            daemon_key = await daemon.identity.signer.public_key()
            async with RelayPool([url]) as pool:
                modes = {
                    "sdk": Requester(pool, keys.public_key().to_hex()),
                    "ours": Requester(pool, ours.pubkey),
                    "tool": Requester(pool, tool.pubkey),
                    "daemon": Requester(pool, daemon_key, controller),
                }
                contextvm = ContextVmRequester(url, daemon_key, controller)
                await contextvm.backend.start()
                await pool.wait_connected(5)
                for requester in modes.values():
                    await requester.replies.wait_eose(5)
                modes["contextvm"] = contextvm
                for requester in modes.values():
                    await requester.round_trip(-1)  # warm up (the daemon's first session)
                    requester.times.clear()
                # Interleaved, so that a noisy neighbour on the machine hits every mode alike.
                for i in range(rounds):
                    for requester in modes.values():
                        await requester.round_trip(i)
                        await asyncio.sleep(0.002)
            counts = await daemon.store.counts() if daemon.store else {}
            await contextvm.backend.close()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if daemon is not None:
                await daemon.stop()
            await browsers.close()
            relay.shutdown()
    print(f"NIP-17 get_url round trip through LocalRelay, {rounds} rounds, interleaved")
    p50 = {name: report(name, r.times) for name, r in modes.items()}
    print(f"  daemon state after the run: {counts}")
    print(f"daemon / tool p50: {p50['daemon'] / p50['tool']:.2f}x   (target <= 1.2x: guard, audit,")
    print("                          dispatcher and outbox against the same tool call)")
    print(f"daemon / ours p50: {p50['daemon'] / p50['ours']:.2f}x   (the tool's own cost included)")
    print(f"daemon / sdk  p50: {p50['daemon'] / p50['sdk']:.2f}x")
    print(f"contextvm / daemon p50: {p50['contextvm'] / p50['daemon']:.2f}x   (MCP over Nostr")
    print("                          against our DM envelope, same daemon, same tool)")
    return {name: r.times for name, r in modes.items()}


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
