"""End to end: the daemon as a ContextVM server, driven by the official TypeScript client
(``@contextvm/sdk`` under ``@modelcontextprotocol/sdk``) over a real relay, with real
Chromium; and the refusals, driven by hand-made events."""

from __future__ import annotations

import asyncio
import base64
import json
import re

from nostr_browserd.nostr import contextvm
from nostr_browserd.nostr.nip01 import tag_values
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.contextvm import JsClient, needs_node
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    seen,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.site import serve_directory
from tests.test_e2e_resilience import NOISE_PAGE

pytestmark = needs_node
CODE = re.compile(r'"approve ([A-Z0-9]+)"')


def text_of(result: dict) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


async def all_tools(client: JsClient) -> dict[str, dict]:
    """Every page of ``tools/list`` (MCP's ``nextCursor``): one message holds 64 KiB."""
    tools: dict[str, dict] = {}
    page = await client.run({"op": "list"})
    while True:
        tools.update({t["name"]: t for t in page["tools"]})
        if not page.get("nextCursor"):
            return tools
        page = await client.run({"op": "list", "cursor": page["nextCursor"]})


def ref_of(snapshot: str, line_part: str) -> str:
    line = next(x for x in snapshot.splitlines() if line_part in x)
    return "@" + line.split("[ref=")[1].split("]")[0]


async def test_the_official_client_lists_and_calls_our_tools(
    nostr_relay_url, site_url, start_daemon
) -> None:
    agent, reader = KeySigner.generate(), KeySigner.generate()
    daemon = await start_daemon(
        [nostr_relay_url],
        controllers=[{"pubkey": agent.pubkey}, {"pubkey": reader.pubkey, "role": "read"}],
    )
    me = await daemon_pubkey(daemon)
    async with JsClient(nostr_relay_url, agent, me) as client:
        hello = await client.run({"op": "connect"})
        assert hello["server"]["name"] == "nostr-browserd"
        assert hello["encryption"] and hello["ephemeral"]
        tools = await all_tools(client)
        assert {"open", "snapshot", "click", "screenshot"} <= set(tools)
        assert tools["snapshot"]["annotations"]["readOnlyHint"] is True
        assert tools["click"]["annotations"]["readOnlyHint"] is False
        assert "url" in tools["open"]["inputSchema"]["properties"]

        opened = await client.call("open", {"url": f"{site_url}/form.html"})
        assert not opened.get("isError"), opened
        assert "form.html" in text_of(opened)
        snapshot = text_of(await client.call("snapshot", {"interactive": True}))
        clicked = await client.call("click", {"ref": ref_of(snapshot, 'button "Send"')})
        assert not clicked.get("isError"), clicked
        shot = await client.call("screenshot")
        image = next(c for c in shot["content"] if c["type"] == "image")
        assert image["mimeType"] == "image/png"
        assert base64.b64decode(image["data"]).startswith(b"\x89PNG")
        failed = await client.call("click", {"ref": "@e999"})
        assert failed["isError"] is True

    # A read role lists (and may run) only what changes nothing.
    async with JsClient(nostr_relay_url, reader, me, stateless=True) as client:
        await client.run({"op": "connect"})
        names = set(await all_tools(client))
        assert "snapshot" in names and "click" not in names and "open" not in names
        refused = await client.call("click", {"ref": "@e1"})
        assert refused["isError"] is True and "FORBIDDEN" in text_of(refused)

    rows = [r for r in await daemon.store.recent(50) if r.controller == agent.pubkey]
    assert {r.transport for r in rows} <= {"contextvm", "contextvm-ephemeral"}
    assert {"open", "snapshot", "click", "screenshot"} <= {r.tool for r in rows}


async def test_a_gated_call_waits_for_the_approvers_dm(
    nostr_relay_url, site_url, start_daemon
) -> None:
    agent = KeySigner.generate()
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[{"pubkey": agent.pubkey, "name": "agent", "approver": phone.npub}],
        )
        me = await daemon_pubkey(daemon)
        async with JsClient(nostr_relay_url, agent, me) as client:
            await client.run({"op": "connect"})
            url = f"{site_url}/form.html"
            opening = asyncio.create_task(client.call("open", {"url": url}))
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            assert ask.content.startswith("agent asks to run open") and url in ask.content
            await phone.send(me, f"approve {CODE.search(ask.content)[1]}")
            opened = await opening
            assert not opened.get("isError"), opened
            assert any("approver" in p.get("message", "") for p in client.progress)

            filling = asyncio.create_task(client.call("fill", {"selector": "#name", "value": "x"}))
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            await phone.send(me, f"deny {CODE.search(ask.content)[1]}")
            denied = await filling
            assert denied["isError"] is True and "DENIED" in text_of(denied)
            value = await client.call("get_value", {"selector": "#name"})
            # An empty value renders as no value line: the denied fill never ran.
            assert text_of(value).startswith("kind: text\n[t1] Form"), value


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


async def test_a_call_survives_a_relay_restart(local_relay_factory, site_url, start_daemon) -> None:
    relay = await local_relay_factory()
    agent = KeySigner.generate()
    async with SdkController([relay.url]) as phone:
        daemon = await start_daemon(
            [relay.url],
            controllers=[{"pubkey": agent.pubkey, "name": "agent", "approver": phone.npub}],
        )
        me = await daemon_pubkey(daemon)
        async with JsClient(relay.url, agent, me) as client:
            await client.run({"op": "connect"})
            opening = asyncio.create_task(client.call("open", {"url": f"{site_url}/form.html"}))
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            # Mid-call: the relay goes away (every connection dropped) and comes back empty.
            await relay.restart()
            await phone.send(me, f"approve {CODE.search(ask.content)[1]}")
            opened = await opening
            assert not opened.get("isError"), opened
            assert "form.html" in text_of(opened)


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
    assert json.loads(server["content"])["serverInfo"]["name"] == "nostr-browserd"
    names = {t["name"] for t in json.loads(found[contextvm.TOOLS_LIST_KIND]["content"])["tools"]}
    assert {"open", "click", "snapshot"} <= names


async def test_a_result_too_big_for_one_event_comes_in_cep22_frames(
    nostr_relay_url, start_daemon, tmp_path
) -> None:
    (tmp_path / "noise.html").write_text(NOISE_PAGE)
    noise = serve_directory(tmp_path)
    agent = KeySigner.generate()
    daemon = await start_daemon([nostr_relay_url], controllers=[agent.pubkey])
    try:
        async with JsClient(nostr_relay_url, agent, await daemon_pubkey(daemon)) as client:
            await client.run({"op": "connect"})
            await client.call("open", {"url": f"http://127.0.0.1:{noise.server_port}/noise.html"})
            shot = await client.call("screenshot", {"selector": "#noise"})
    finally:
        noise.shutdown()
        noise.server_close()
    png = base64.b64decode(next(c for c in shot["content"] if c["type"] == "image")["data"])
    assert png.startswith(b"\x89PNG") and len(png) > 4 * contextvm.NIP44_MAX_PLAINTEXT
