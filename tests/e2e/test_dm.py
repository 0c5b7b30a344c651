"""End to end: a controller on nostr-sdk drives the daemon through a real relay and Chromium."""

import asyncio
import datetime
import json
import logging
import sys
from pathlib import Path

import nostr_sdk as n

from nostr_browserd import __version__
from nostr_browserd.daemon.keyfile import write_new_key
from nostr_browserd.errors import ErrorCode
from nostr_browserd.nostr.nip19 import npub_encode
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.leaks import LEAKS


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
        # The same tools as over NIP-17: snapshot, fill, click, get_text, all over kind 4.
        snap = await phone.command(
            me, {"tool": "snapshot", "params": {"interactive": True}}, nip04=True
        )
        text = snap["data"]["snapshot"]
        name, send = ref_of(text, 'textbox "Name"'), ref_of(text, 'button "Send"')
        fill = {"tool": "fill", "params": {"ref": name, "value": "Lin"}}
        assert (await phone.command(me, fill, nip04=True))["success"]
        click = {"tool": "click", "params": {"ref": send}}
        assert (await phone.command(me, click, nip04=True))["success"]
        read = {"tool": "get_text", "params": {"selector": "#out"}}
        assert (await phone.command(me, read, nip04=True))["data"]["text"] == "sent Lin"
        assert {r.scheme for r in phone.received} == {"nip04"}


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


async def test_the_daemon_announces_where_to_reach_it(
    nostr_relay_url, local_relay_factory, start_daemon
):
    discovery = await local_relay_factory()
    daemon = await start_daemon([nostr_relay_url], nostr={"discovery_relays": [discovery.url]})
    me = await daemon_pubkey(daemon)
    for relay in (nostr_relay_url, discovery.url):
        async with SdkController([relay]) as client:
            events = await wait_for_kinds(client, me, {0, 10002, 10050})
            assert ["relay", nostr_relay_url] in events[10050]["tags"]
            assert ["r", nostr_relay_url] in events[10002]["tags"]
            profile = json.loads(events[0]["content"])
            assert profile["name"] == "nostr-browserd" and profile["version"] == __version__


async def wait_for_kinds(client, author: str, kinds: set[int]) -> dict[int, dict]:
    """The daemon's events of ``kinds`` on the client's relay (polling: publishing is async)."""
    found: dict[int, dict] = {}
    async with asyncio.timeout(20):
        while set(found) != kinds:
            filters = n.Filter().author(n.PublicKey.parse(author)).kinds([n.Kind(k) for k in kinds])
            events = await client.client.fetch_events(
                n.ReqTarget.auto([filters]), timeout=datetime.timedelta(seconds=2)
            )
            for event in events:
                found[event.kind().as_u16()] = json.loads(event.as_json())
            await asyncio.sleep(0.05)
    return found


async def test_replies_also_go_to_the_controllers_inbox_relays(
    nostr_relay_url, local_relay_factory, start_daemon
):
    inbox = await local_relay_factory()
    async with SdkController([nostr_relay_url, inbox.url]) as phone:
        # The phone lists its DM inbox (kind 10050) on the shared relay only.
        inbox_list = (
            n.EventBuilder(n.Kind(10050), "")
            .tags([n.Tag.parse(["relay", inbox.url])])
            .finalize(phone.keys)
        )
        await phone.publish(inbox_list)
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        await wait_for_kinds(phone, phone.pubkey, {10050})
        async with asyncio.timeout(20):
            while not daemon.link.outbox.reaches_inbox_of(phone.pubkey):
                await asyncio.sleep(0.05)
        assert (await phone.command(me, {"tool": "get_url"}))["success"]
        async with SdkController([inbox.url], phone.keys) as inbox_only:
            reply = await inbox_only.wait_reply(lambda r: r.sender == me)
            assert reply.json["success"]


async def test_inbox_relays_that_demand_auth(local_relay_factory, start_daemon, tmp_path):
    # Why our own `send` is the controller here, not nostr-sdk as everywhere else: nostr-sdk's
    # Python client cannot answer AUTH (its authenticator callback runs without an event loop
    # and crashes), so the controller is our `send` CLI, which answers it through RelayPool.
    relay = await local_relay_factory(nip42=n.LocalRelayBuilderNip42Mode.BOTH)
    key = tmp_path / "controller.nsec"
    controller = npub_encode(write_new_key(key))
    daemon = await start_daemon([relay.url], controllers=[controller])
    me = npub_encode(await daemon_pubkey(daemon))
    cli = str(Path(sys.executable).with_name("nostr-browserd"))
    proc = await asyncio.create_subprocess_exec(
        cli,
        "send",
        "--to",
        me,
        "--key",
        str(key),
        "--relay",
        relay.url,
        "--json",
        "get",
        "url",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    LEAKS.output(out + err, "nostr-browserd send's output")
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["success"]
    assert daemon.link.relay_status()[relay.url].authenticated


async def test_a_password_never_reaches_the_log_or_the_store(
    nostr_relay_url, site_url, start_daemon, caplog
):
    caplog.set_level(logging.DEBUG)
    password = "hunter2-correct-horse"
    LEAKS.secret(password, "a password typed with fill --secret")
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        await phone.command(me, {"tool": "open", "params": {"url": f"{site_url}/form.html"}})
        # Without secret=true the tool refuses, but only after looking at the field: the
        # command was already on its way to the log by then.
        fill = {"selector": "#password", "value": password}
        refused = await phone.command(me, {"tool": "fill", "params": fill})
        assert refused["error"]["code"] == "REFUSED", refused
        filled = await phone.command(me, {"tool": "fill", "params": {**fill, "secret": True}})
        assert filled["success"] and password not in json.dumps(filled), filled
        read = await phone.command(me, {"tool": "get_value", "params": {"selector": "#password"}})
        assert password not in json.dumps(read)
        state_files = b"".join(p.read_bytes() for p in daemon.config.state.dir.rglob("*.sqlite3*"))
    assert password not in caplog.text
    assert password.encode() not in state_files
    assert "[21 chars]" in caplog.text
