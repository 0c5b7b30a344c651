"""``nostr-browserd mcp --to NPUB``: a daemon on a real relay, driven through the mcp SDK's client.

The daemon runs in this process (its browser, store and log are inspectable); the MCP server
is the real CLI in a subprocess, holding the agent's key; the approver is an independent
Nostr client (nostr-sdk).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.dm.chunks import DEFAULT_PART_BYTES
from tests.e2e.test_policy import CODE, agent_and_phone
from tests.e2e.test_resilience import NOISE_PAGE
from tests.fixtures.daemon import (
    SdkController,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.mcp_client import connect, ref_of
from tests.fixtures.site import serve_directory

ROLE = ["open", "snapshot", "screenshot", "get_title", "watch"]


async def test_the_roles_tools_run_and_a_big_screenshot_reassembles(
    nostr_relay_url, site_url, start_daemon, tmp_path: Path
):
    """No --relay: the daemon's relays are looked up (its kind 10050 and 10002).

    Watched events come by DM, and reach the host as log notices.
    """
    (tmp_path / "noise.html").write_text(NOISE_PAGE)
    noise = serve_directory(tmp_path)
    agent = SdkController([nostr_relay_url])
    key = agent.write_key(tmp_path / "agent.nsec")
    daemon = await start_daemon(
        [nostr_relay_url], controllers=[{"pubkey": agent.npub, "name": "agent", "role": ROLE}]
    )
    notices: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        notices.append(params)

    args = ("--to", daemon.npub, "--key", str(key), "--discovery", nostr_relay_url)
    try:
        async with connect(*args, logging_callback=on_log) as session:
            listed = [t.name for t in (await session.list_tools()).tools]
            watching = await session.call_tool("watch", {"events": ["load"]})
            opened = await session.call_tool("open", {"url": f"{site_url}/form.html"})
            await wait_until(lambda: any(n.data.get("event") == "load" for n in notices))
            snap = await session.call_tool("snapshot", {"interactive": True})
            refused = await session.call_tool(
                "click", {"ref": ref_of(snap.content[0].text, "Send")}
            )
            noisy = f"http://127.0.0.1:{noise.server_port}/noise.html"
            await session.call_tool("open", {"url": noisy})
            shot = await session.call_tool("screenshot", {"selector": "#noise"})
    finally:
        noise.shutdown()
        noise.server_close()
    assert listed == [t.name for t in REGISTRY if t.name in ROLE], "what the role allows"
    assert not watching.is_error and not opened.is_error and "Form" in opened.content[0].text
    load = next(n for n in notices if n.data.get("event") == "load")
    assert load.logger == "browser" and "form.html" in load.data["url"]
    assert refused.is_error and refused.content[0].text.startswith("FORBIDDEN: ")
    assert not shot.is_error, shot.content
    png = base64.b64decode(shot.content[0].data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 250_000 > DEFAULT_PART_BYTES, "a reply this big travels in parts"


async def test_a_key_not_allowed_gets_an_error_and_nothing_runs(
    nostr_relay_url, site_url, start_daemon, tmp_path: Path, caplog
):
    stranger = SdkController([nostr_relay_url])
    key = stranger.write_key(tmp_path / "stranger.nsec")
    someone = SdkController([nostr_relay_url])
    daemon = await start_daemon([nostr_relay_url], controllers=[someone.npub])
    args = ("--to", daemon.npub, "--key", str(key), "--relay", nostr_relay_url, "--timeout", "5")
    caplog.set_level(logging.WARNING, logger="nostr_browserd.dm.inbox")
    async with connect(*args) as session:
        result = await session.call_tool("open", {"url": f"{site_url}/form.html"})
        with pytest.raises(MCPError) as listing:
            await session.list_tools()
    text = result.content[0].text
    assert result.is_error and text.startswith("UNAVAILABLE: ")
    assert "never answers a key that is not on its allow-list" in text and stranger.npub in text
    assert "allow-list" in listing.value.error.message
    # The commands did reach the daemon, which dropped them: nothing ran, nothing was logged.
    assert f"unknown key {stranger.pubkey}" in caplog.text
    assert daemon.browser.sessions() == []
    assert await daemon.store.recent(10) == []


async def test_a_gated_call_reports_progress_and_runs_once_approved(
    nostr_relay_url, site_url, start_daemon, tmp_path: Path
):
    agent, phone, daemon, me = await agent_and_phone(nostr_relay_url, start_daemon)
    key = agent.write_key(tmp_path / "agent.nsec")
    try:
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        async def approve(verdict: str) -> str:
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            await wait_until(lambda: bool(progress))  # the host hears of the wait first
            await phone.send(me, f"{verdict} {CODE.search(ask.content)[1]}")
            return ask.content

        args = ("--to", daemon.npub, "--key", str(key), "--relay", nostr_relay_url)
        async with connect(*args) as session:
            url = f"{site_url}/form.html"
            opening = asyncio.create_task(
                session.call_tool("open", {"url": url}, progress_callback=on_progress)
            )
            asked = await approve("approve")
            opened = await opening
            first = progress[0]
            progress.clear()
            filling = asyncio.create_task(
                session.call_tool(
                    "fill", {"selector": "#name", "value": "x"}, progress_callback=on_progress
                )
            )
            await approve("deny")
            denied = await filling
            value = await session.call_tool("get_value", {"selector": "#name"})
    finally:
        await agent.__aexit__(None, None, None)
        await phone.__aexit__(None, None, None)
    assert asked.startswith("agent asks to run open") and url in asked
    assert not opened.is_error and "Form" in opened.content[0].text
    assert first[1] == 60 and "waiting for approval" in first[2] and "s left" in first[2]
    assert denied.is_error and denied.content[0].text.startswith("DENIED: ")
    assert isinstance(value.content[0], types.TextContent) and '"x"' not in value.content[0].text
