"""End to end: the daemon's ContextVM server against hand-made events (what the official
client would never send: a stranger's call, a plaintext request, a replay, broken ones), its
off switch and its announcements, and ``mcp --to`` choosing ContextVM or DMs."""

from __future__ import annotations

import asyncio
import json

import pytest

from nostr_browserd import __version__
from nostr_browserd.mcp.contextvm_remote import AutoBackend, ContextVmBackend
from nostr_browserd.mcp.remote import RemoteBackend
from nostr_browserd.nostr import contextvm
from nostr_browserd.nostr.nip01 import tag_values
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import (
    daemon_pubkey,
    seen,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)


class HandClient:
    """ContextVM by hand (our own nostr/contextvm.py): events the official client would
    never send (a replay, a plaintext request, a broken one), and every answer to ``key``."""

    def __init__(self, relay: str, key: KeySigner, server: str) -> None:
        self.key, self.server = key, server
        self.pool = RelayPool([relay])
        self.answers: list[dict] = []  # the inner kind 25910 events answering us

    async def __aenter__(self) -> HandClient:
        await self.pool.start()
        filters = [{"kinds": list(contextvm.WRAP_KINDS), "#p": [self.key.pubkey]}]
        self._sub = self.pool.subscribe(filters)
        await self._sub.wait_eose(10)
        self._reading = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._reading.cancel()
        self._sub.close()
        await self.pool.close()

    async def _read(self) -> None:
        async for wrap in self._sub:
            inner = await contextvm.unwrap(wrap, self.key)
            self.answers.append(contextvm.inner_message(inner, self.key.pubkey))

    async def message(self, content: str) -> dict:
        """A signed kind 25910 to the server (not yet sent)."""
        return await self.key.sign_event(contextvm.message_template(content, self.server))

    async def send(self, message: dict, kind: int = 1059) -> str:
        """Publish ``message`` in a fresh gift wrap; returns the wrap's id."""
        wrap = contextvm.wrap(message, self.server, kind)
        assert (await self.pool.publish(wrap, 5)).ok
        return wrap["id"]

    async def answer_to(self, message: dict) -> dict:
        """The JSON-RPC answer citing ``message`` (waits for it)."""
        await wait_until(lambda: self.citing(message))
        return json.loads(self.citing(message)[0]["content"])

    def citing(self, message: dict) -> list[dict]:
        return [a for a in self.answers if message["id"] in tag_values(a, "e")]

    async def ping(self) -> None:
        """A request answered after everything sent before it was taken (the inbox keeps a
        sender's order): what lets a test see that nothing else was answered."""
        ping = await self.message(json.dumps({"jsonrpc": "2.0", "id": "ping", "method": "ping"}))
        await self.send(ping, contextvm.EPHEMERAL_WRAP_KIND)
        assert (await self.answer_to(ping))["result"] == {}


def call(request_id: str, tool: str, arguments: dict) -> str:
    params = {"name": tool, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


async def test_strangers_replays_plaintext_and_broken_messages_get_nothing(
    nostr_relay_url, site_url, start_daemon, caplog
) -> None:
    agent, stranger = KeySigner.generate(), KeySigner.generate()
    daemon = await start_daemon([nostr_relay_url], controllers=[agent.pubkey])
    me = await daemon_pubkey(daemon)
    url = f"{site_url}/form.html"
    async with HandClient(nostr_relay_url, agent, me) as hand:
        # A stranger's call is opened (a wrap does not say who sent it), never answered.
        async with HandClient(nostr_relay_url, stranger, me) as unlisted:
            wrap_id = await unlisted.send(await unlisted.message(call("s", "open", {"url": url})))
            await wait_until(lambda: seen(daemon.store, wrap_id))
            await hand.ping()
            assert unlisted.answers == []

        # A plaintext request is not read, so not run (its answer would show who may call).
        plain = await hand.message(call("p", "open", {"url": url}))
        assert (await hand.pool.publish(plain, 5)).ok
        await hand.ping()
        assert hand.citing(plain) == []

        # The same request in a second wrap runs once: the inner id is claimed.
        snapshot = await hand.message(call("r", "get_url", {}))
        await hand.send(snapshot)
        assert not (await hand.answer_to(snapshot))["result"]["isError"]
        await hand.send(snapshot, contextvm.EPHEMERAL_WRAP_KIND)
        await hand.ping()
        assert len(hand.citing(snapshot)) == 1

        # Not JSON-RPC, or a forged signature: dropped and logged, the daemon goes on.
        await hand.send(await hand.message("open the pod bay doors"))
        forged = {**await hand.message(call("f", "open", {"url": url})), "content": "{}"}
        await hand.send(forged)
        await hand.ping()
        assert hand.citing(forged) == []
        logged = caplog.text
        assert "dropped a ContextVM message from" in logged and "not a JSON-RPC" in logged
        assert "dropped a ContextVM message: ContextVM message: id mismatch" in logged

    rows = await daemon.store.recent(50)
    assert [r.tool for r in rows if r.tool in ("open", "get_url")] == ["get_url"]


async def test_contextvm_can_be_turned_off(nostr_relay_url, start_daemon, caplog) -> None:
    agent = KeySigner.generate()
    daemon = await start_daemon(
        [nostr_relay_url], controllers=[agent.pubkey], contextvm={"enabled": False}
    )
    me = await daemon_pubkey(daemon)
    async with HandClient(nostr_relay_url, agent, me) as hand:
        ping = await hand.message(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        wrap_id = await hand.send(ping)
        # Read as a DM, it is not one (no seal inside): dropped, and remembered as such.
        await wait_until(lambda: "seal: kind is 25910, expected 13" in caplog.text)
        assert await seen(daemon.store, wrap_id)
        assert daemon.contextvm is None and hand.answers == []


async def test_announcements_are_opt_in_and_say_what_they_say(nostr_relay_url, start_daemon):
    daemon = await start_daemon(
        [nostr_relay_url],
        controllers=[KeySigner.generate().pubkey],
        contextvm={"announce": True, "website": "https://example.org"},
    )
    me = await daemon_pubkey(daemon)
    pool = RelayPool([nostr_relay_url])
    await pool.start()
    try:
        kinds = [contextvm.SERVER_ANNOUNCEMENT_KIND, contextvm.TOOLS_LIST_KIND]
        sub = pool.subscribe([{"kinds": kinds, "authors": [me]}])
        found: dict[int, dict] = {}
        async with asyncio.timeout(20):
            async for event in sub:
                found[event["kind"]] = event
                if len(found) == 2:
                    break
        sub.close()
    finally:
        await pool.close()
    server = found[contextvm.SERVER_ANNOUNCEMENT_KIND]
    assert ["name", "nostr-browserd"] in server["tags"]
    assert ["website", "https://example.org"] in server["tags"]
    assert ["support_encryption"] in server["tags"]
    info = json.loads(server["content"])["serverInfo"]
    assert info == {"name": "nostr-browserd", "version": __version__}
    names = {t["name"] for t in json.loads(found[contextvm.TOOLS_LIST_KIND]["content"])["tools"]}
    assert {"open", "click", "snapshot"} <= names


@pytest.mark.parametrize("enabled", [True, False])
async def test_auto_uses_contextvm_when_answered_and_dms_otherwise(
    nostr_relay_url, start_daemon, enabled
) -> None:
    agent = KeySigner.generate()
    daemon = await start_daemon(
        [nostr_relay_url], controllers=[agent.pubkey], contextvm={"enabled": enabled}
    )
    me = await daemon_pubkey(daemon)
    cvm = ContextVmBackend(agent, me, [nostr_relay_url])
    dm = RemoteBackend(agent, me, [nostr_relay_url])
    auto = AutoBackend(cvm, dm, probe_timeout=3)
    await auto.start()
    try:
        assert auto.chosen is (cvm if enabled else dm)
        assert "snapshot" in (await auto.allowed() or [])
    finally:
        await auto.close()
