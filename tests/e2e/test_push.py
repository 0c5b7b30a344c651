"""Push events: the daemon's local clients get the local session's events, and a controller
that watches gets its own as messages, coalesced by the rate limiter."""

import asyncio
import json

from websockets.asyncio.client import connect

from nostr_browserd.dm.push import MAX_HELD, EventForwarder
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)


def watched(owner, n, **extra):
    return {"event": "load", "data": {"n": n}, "owner": owner, "watched": True, **extra}


async def test_forwarder_sends_the_first_event_and_coalesces_the_rest():
    sent = []

    async def deliver(owner, text):
        sent.append((owner, json.loads(text)))

    forwarder = EventForwarder(deliver, interval=0.05)
    forwarder.push(watched("alice", 1))
    await wait_until(lambda: len(sent) == 1)  # the first event goes out at once, alone
    for n in range(2, MAX_HELD + 5):
        forwarder.push(watched("alice", n))
    forwarder.push({"event": "load", "data": {}, "owner": "alice"})  # not watched
    forwarder.push(watched("local", 0))  # the local channel has its own push
    forwarder.push(watched("bob", 1))
    await wait_until(lambda: len(sent) == 3 and not forwarder._senders)
    alice = [message for owner, message in sent if owner == "alice"]
    assert [[e["data"]["n"] for e in m["events"]] for m in alice] == [
        [1],
        list(range(5, MAX_HELD + 5)),
    ]
    assert alice[1]["dropped"] == 3 and alice[0]["type"] == "events"
    assert next(m for owner, m in sent if owner == "bob")["events"] == [
        {"event": "load", "data": {"n": 1}}
    ]
    await forwarder.close()


async def test_local_clients_get_events_and_watchers_get_messages(
    nostr_relay_url, site_url, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)

        async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
            await ws.send(f"open {site_url}/index.html")
            events = []
            while (message := await ws.recv()).startswith('{"type": "event"'):
                events.append(json.loads(message))
        assert {
            "type": "event",
            "event": "load",
            "data": {"url": f"{site_url}/index.html", "title": "Test site", "tab": "t1"},
        } in events

        watching = await phone.command(me, {"tool": "watch", "params": {"events": ["load"]}})
        assert watching["data"]["watching"] == ["load"]
        # A local client stays connected while the phone's session loads a page.
        local_client = await connect(daemon.local.url, additional_headers=daemon.local.headers)
        opened = await phone.command(
            me, {"tool": "open", "params": {"url": f"{site_url}/form.html"}}
        )
        assert opened["success"]

        # the events may come before the reply that phone.command waited for
        def pushed():
            return [r for r in phone.received if r.sender == me and '"events"' in r.content]

        async with asyncio.timeout(20):
            while not pushed():
                await phone.poll()
        assert json.loads(pushed()[0].content)["events"] == [
            {
                "event": "load",
                "data": {"url": f"{site_url}/form.html", "title": "Form", "tab": "t1"},
            }
        ]
        # the DM controller's events never reach the local clients
        async with local_client:
            await local_client.send("get url")
            later = []
            while (message := await local_client.recv()).startswith('{"type": "event"'):
                later.append(json.loads(message))
            assert f"{site_url}/index.html" in message  # the local session's own page
        assert all(f"{site_url}/form.html" not in json.dumps(e) for e in later), later
