"""End to end: the daemon as a ContextVM server, driven by the official TypeScript client
(``@contextvm/sdk`` under ``@modelcontextprotocol/sdk``) over a real relay, with real
Chromium; and the refusals, driven by hand-made events."""

from __future__ import annotations

import asyncio
import base64
import re

from nostr_browserd.nostr import contextvm
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_resilience import NOISE_PAGE
from tests.fixtures.contextvm import JsClient
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.site import serve_directory

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
    node, nostr_relay_url, site_url, start_daemon
) -> None:
    agent, reader = KeySigner.generate(), KeySigner.generate()
    daemon = await start_daemon(
        [nostr_relay_url],
        controllers=[{"pubkey": agent.pubkey}, {"pubkey": reader.pubkey, "role": "read"}],
    )
    me = await daemon_pubkey(daemon)
    async with JsClient(node, nostr_relay_url, agent, me) as client:
        hello = await client.run({"op": "connect"})
        assert hello["server"]["name"] == "nostr-browserd"
        assert hello["encryption"] and hello["ephemeral"]
        tools = await all_tools(client)
        assert {"open", "snapshot", "click", "screenshot"} <= set(tools)
        assert tools["snapshot"]["annotations"]["readOnlyHint"] is True
        assert tools["click"]["annotations"]["readOnlyHint"] is False
        assert "url" in tools["open"]["inputSchema"]["properties"]
        monitors = {"monitor_add", "monitor_list", "schedule_add", "schedule_run"}
        assert (
            monitors <= set(tools) and "every" in tools["monitor_add"]["inputSchema"]["properties"]
        )

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
    async with JsClient(node, nostr_relay_url, reader, me, stateless=True) as client:
        await client.run({"op": "connect"})
        names = set(await all_tools(client))
        assert "snapshot" in names and "click" not in names and "open" not in names
        refused = await client.call("click", {"ref": "@e1"})
        assert refused["isError"] is True and "FORBIDDEN" in text_of(refused)

    rows = [r for r in await daemon.store.recent(50) if r.controller == agent.pubkey]
    assert {r.transport for r in rows} <= {"contextvm", "contextvm-ephemeral"}
    assert {"open", "snapshot", "click", "screenshot"} <= {r.tool for r in rows}


async def test_a_gated_call_waits_for_the_approvers_dm(
    node, nostr_relay_url, site_url, start_daemon
) -> None:
    agent = KeySigner.generate()
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[{"pubkey": agent.pubkey, "name": "agent", "approver": phone.npub}],
        )
        me = await daemon_pubkey(daemon)
        async with JsClient(node, nostr_relay_url, agent, me) as client:
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
            assert text_of(value) == "kind: text", value  # the tab's line: as the open said


async def test_a_call_survives_a_relay_restart(
    node, local_relay_factory, site_url, start_daemon
) -> None:
    relay = await local_relay_factory()
    agent = KeySigner.generate()
    async with SdkController([relay.url]) as phone:
        daemon = await start_daemon(
            [relay.url],
            controllers=[{"pubkey": agent.pubkey, "name": "agent", "approver": phone.npub}],
        )
        me = await daemon_pubkey(daemon)
        async with JsClient(node, relay.url, agent, me) as client:
            await client.run({"op": "connect"})
            opening = asyncio.create_task(client.call("open", {"url": f"{site_url}/form.html"}))
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            # Mid-call: the relay goes away (every connection dropped) and comes back empty.
            await relay.restart()
            await phone.send(me, f"approve {CODE.search(ask.content)[1]}")
            opened = await opening
            assert not opened.get("isError"), opened
            assert "form.html" in text_of(opened)


async def test_a_result_too_big_for_one_event_comes_in_cep22_frames(
    node, nostr_relay_url, start_daemon, tmp_path
) -> None:
    (tmp_path / "noise.html").write_text(NOISE_PAGE)
    noise = serve_directory(tmp_path)
    agent = KeySigner.generate()
    daemon = await start_daemon([nostr_relay_url], controllers=[agent.pubkey])
    try:
        async with JsClient(node, nostr_relay_url, agent, await daemon_pubkey(daemon)) as client:
            await client.run({"op": "connect"})
            await client.call("open", {"url": f"http://127.0.0.1:{noise.server_port}/noise.html"})
            shot = await client.call("screenshot", {"selector": "#noise"})
    finally:
        noise.shutdown()
        noise.server_close()
    png = base64.b64decode(next(c for c in shot["content"] if c["type"] == "image")["data"])
    assert png.startswith(b"\x89PNG") and len(png) > 4 * contextvm.NIP44_MAX_PLAINTEXT
