"""End to end: a controller on nostr-sdk drives the daemon through a real relay and Chromium."""

import json

from nostr_browserd.errors import ErrorCode
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)


def ref_of(snapshot: str, needle: str) -> str:
    """The ref on the first snapshot line containing ``needle``."""
    line = next(line for line in snapshot.splitlines() if needle in line)
    return "@" + line.split("[ref=")[1].split("]")[0]


async def test_nip17_commands_run_and_are_answered(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        url = f"{site_url}/form.html"
        opened = await phone.command(me, {"tool": "open", "params": {"url": url}})
        assert opened["success"], opened
        snap = await phone.command(me, {"tool": "snapshot", "params": {"interactive": True}})
        text = snap["data"]["snapshot"]
        name, send = ref_of(text, 'textbox "Name"'), ref_of(text, 'button "Send"')
        filled = await phone.command(me, {"tool": "fill", "params": {"ref": name, "value": "Ada"}})
        assert filled["success"], filled
        clicked = await phone.command(me, {"tool": "click", "params": {"ref": send}})
        assert clicked["success"], clicked
        got = await phone.command(me, {"tool": "get_text", "params": {"selector": "#out"}})
        assert got["data"]["text"] == "sent Ada"
        # Replies are gift-wrapped kind 14s that cite the request rumor.
        reply = phone.received[-1]
        assert reply.scheme == "nip17" and reply.sender == me
        assert any(t[0] == "e" for t in reply.tags)


async def test_nip04_commands_and_text_replies(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        request_id = await phone.send(me, f"open {site_url}/form.html", nip04=True)
        reply = await phone.wait_reply(lambda r: r.sender == me)
        assert reply.scheme == "nip04"
        assert ["e", request_id] in [t[:2] for t in reply.tags]
        assert ["p", phone.pubkey] in [t[:2] for t in reply.tags]
        assert "form.html" in reply.content and not reply.content.startswith("{")
        got = await phone.command(me, {"tool": "get_title"}, nip04=True)
        assert got["data"]["title"] == "Form"


async def test_malformed_commands_are_answered_with_invalid_params(nostr_relay_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        await phone.send(me, '{"id": 1, "tool": "open", "params": "nope"}')
        reply = await phone.wait_reply(lambda r: r.sender == me)
        assert reply.json["error"]["code"] == ErrorCode.INVALID_PARAMS
        bad = await phone.command(me, {"tool": "open", "params": {"address": "x"}})
        assert bad["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "url" in bad["error"]["message"]
        await phone.send(me, '{"id": 3, "tool": ')
        reply = await phone.wait_reply(lambda r: r.sender == me)
        assert json.loads(reply.content)["error"]["code"] == ErrorCode.INVALID_PARAMS
