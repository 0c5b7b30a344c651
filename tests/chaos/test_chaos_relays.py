"""Chaos: the daemon among hostile relays.  A relay restarted mid-command, one that spews
garbage, 10 MB frames, deep JSON and endless AUTH, one that never answers OK, one that
replays old events.  Every time: the command runs once (one audit row), is answered once,
and the daemon keeps serving (a second command is answered too).

The controller is nostr-sdk on a well-behaved relay (nostr-sdk's LocalRelay); the hostile
relay is scripted here, on top of the permissive relay of ``tests/fixtures/daemon.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.server import serve

from tests.fixtures.daemon import (
    PermissiveRelay,
    SdkController,
    _response_id,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)

GARBAGE = [
    "not json",
    "[]",
    '["EVENT"]',
    '["OK", 1, 2, 3]',
    '["EVENT", "sub", "not an event"]',
    '["CLOSED"]',
    '{"EVENT": 1}',
]


class HostileRelay(PermissiveRelay):
    """The permissive relay, plus misbehaviour: ``noise`` frames sent to every connection
    every 50 ms, no ``OK`` for events (``answer_ok=False``), stored events re-sent to every
    subscription every 50 ms (``replay``), and :meth:`restart` on the same port."""

    def __init__(
        self, noise: tuple[str, ...] = (), *, answer_ok: bool = True, replay: bool = False
    ) -> None:
        super().__init__()
        self.noise, self.answer_ok, self.replay = noise, answer_ok, replay
        self.port = 0

    async def start(self) -> str:
        self._server = await serve(self._serve, "127.0.0.1", self.port, max_size=None)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}"
        return self.url

    async def restart(self) -> None:
        """Drop every connection and serve again on the same port, events kept."""
        await self.close()
        self._subs.clear()
        await self.start()

    async def _serve(self, ws: Any) -> None:
        chaos = asyncio.create_task(self._chaos(ws))
        try:
            if self.answer_ok:
                await super()._serve(ws)
            else:
                await super()._serve(_NoOk(ws))
        finally:
            chaos.cancel()

    async def _chaos(self, ws: Any) -> None:
        with contextlib.suppress(Exception):  # the connection went away
            while True:
                for frame in self.noise:
                    await ws.send(frame)
                for sub_id in list(self._subs.get(ws, {})) if self.replay else ():
                    for event in self.events:
                        await ws.send(json.dumps(["EVENT", sub_id, event]))
                await asyncio.sleep(0.05)


class _NoOk:
    """A connection whose ``OK`` frames are swallowed: the relay takes events, never says so."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._ws.__aiter__()

    async def send(self, frame: str) -> None:
        if not frame.startswith('["OK"'):
            await self._ws.send(frame)


@contextlib.asynccontextmanager
async def hostile(relay: HostileRelay) -> AsyncIterator[HostileRelay]:
    await relay.start()
    try:
        yield relay
    finally:
        await relay.close()


async def command_once(phone: SdkController, daemon: Any, me: str, request: dict) -> dict:
    """Send ``request``, return its answer; then prove it ran once and was answered once."""
    request = {"id": secrets.token_hex(4), **request}
    answer = await phone.command(me, request)
    # A second command's answer is the daemon still serving, and a bound on duplicates:
    # anything the first one caused was published before it.
    assert (await phone.command(me, {"tool": "help", "params": {"tool": "wait"}}))["success"]
    answers = [r for r in phone.received if _response_id(r.content) == request["id"]]
    assert len(answers) == 1, answers
    runs = [e for e in await daemon.store.recent(100) if e.request_id == request["id"]]
    assert len(runs) == 1, runs
    return answer


NOISES = {
    "garbage": tuple(GARBAGE),
    "deep JSON": ("[" * 60000, '["EVENT", "x", ' + '{"a":' * 100 + "1" + "}" * 100 + "]"),
    "10 MB frames": ('["NOTICE", "' + "x" * 10_000_000 + '"]',),
    "endless AUTH": (json.dumps(["AUTH", "challenge"]),),
}


@pytest.mark.parametrize("noise", list(NOISES), ids=list(NOISES))
async def test_a_relay_spewing_noise(local_relay_factory, start_daemon, noise) -> None:
    good = await local_relay_factory()
    async with (
        hostile(HostileRelay(NOISES[noise], replay=True)) as bad,
        SdkController([good.url]) as phone,
    ):
        daemon = await start_daemon([good.url, bad.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        answer = await command_once(phone, daemon, me, {"tool": "wait", "params": {"ms": 1}})
        assert answer["success"]
        status = daemon.link.relay_status()[bad.url]
        if noise in ("garbage", "deep JSON"):  # each frame dropped, the connections kept
            assert status.counts["bad_messages"] >= len(NOISES[noise])
            assert status.counts["connects"] == 2, status.last_error
        if noise == "10 MB frames":  # over the 1 MiB limit: dropped, retried with backoff
            assert "too big" in (status.last_error or "")
        if noise == "endless AUTH":  # answered a few times per connection, then ignored
            assert status.counts["auth"] == 0 and "keeps asking" in (status.last_error or "")


async def test_a_relay_that_never_answers_ok(local_relay_factory, start_daemon) -> None:
    good = await local_relay_factory()
    async with (
        hostile(HostileRelay(answer_ok=False)) as silent,
        SdkController([good.url]) as phone,
    ):
        daemon = await start_daemon(
            [good.url, silent.url], controllers=[phone.npub], nostr={"publish_timeout": 2}
        )
        me = await daemon_pubkey(daemon)
        answer = await command_once(phone, daemon, me, {"tool": "wait", "params": {"ms": 1}})
        assert answer["success"] and silent.events  # it took the reply, and said nothing


async def test_a_relay_replaying_old_events(local_relay_factory, start_daemon) -> None:
    good = await local_relay_factory()
    async with (
        hostile(HostileRelay(replay=True)) as replayer,
        SdkController([good.url]) as phone,
    ):
        daemon = await start_daemon([good.url, replayer.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        request = {"id": "replayed", "tool": "wait", "params": {"ms": 1}}
        wrap = phone.nip17(me, json.dumps(request))
        replayer.events.append(json.loads(wrap.as_json()))  # replayed every 50 ms, forever
        await phone.publish(wrap)
        await phone.wait_reply(lambda r: _response_id(r.content) == "replayed")
        await command_once(phone, daemon, me, {"tool": "wait", "params": {"ms": 1}})
        assert len([r for r in phone.received if _response_id(r.content) == "replayed"]) == 1
        assert len([e for e in await daemon.store.recent(100) if e.request_id == "replayed"]) == 1


async def test_a_relay_killed_and_restarted_mid_command(start_daemon) -> None:
    """The only relay goes away while a command runs, and comes back with every event it
    had (the command included): the command is answered once, and not run again."""
    async with hostile(HostileRelay()) as relay, SdkController([relay.url]) as phone:
        daemon = await start_daemon([relay.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        request = {"id": "mid", "tool": "wait", "params": {"ms": 1500}}
        await phone.send(me, json.dumps(request))
        async with asyncio.timeout(30):  # until it runs
            while daemon.dispatcher.status().get("running", {}) == {}:
                await asyncio.sleep(0.02)
        await relay.restart()
        answer = await phone.wait_reply(lambda r: _response_id(r.content) == "mid")
        assert answer.json["success"]
        await command_once(phone, daemon, me, {"tool": "wait", "params": {"ms": 1}})
        assert len([r for r in phone.received if _response_id(r.content) == "mid"]) == 1
        assert len([e for e in await daemon.store.recent(100) if e.request_id == "mid"]) == 1
