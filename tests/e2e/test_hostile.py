"""End to end: what must run nothing.  Strangers, forgeries and bad signatures also get no reply;
replays, duplicates across relays and re-deliveries after a restart run exactly once."""

import json

from nostr_browserd.nostr.nip01 import finalize_event, now
from nostr_browserd.nostr.nip04 import encrypt as nip04_encrypt
from nostr_browserd.nostr.nip59 import make_rumor, wrap
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    forged_wrap,
    permissive_relay_fixture,  # noqa: F401
    seen,
    start_daemon_fixture,  # noqa: F401
    tampered,
    wait_until,
)


def signer_of(controller: SdkController) -> KeySigner:
    """Our KeySigner for the controller's nostr-sdk key (to hand-build its messages)."""
    return KeySigner(bytes.fromhex(controller.keys.secret_key().to_hex()))


async def commands_run(daemon) -> list[str]:
    return [e.tool for e in await daemon.store.recent(100)]


async def test_strangers_and_forged_seals_run_nothing_and_get_no_reply(
    nostr_relay_url, site_url, start_daemon
):
    async with (
        SdkController([nostr_relay_url]) as phone,
        SdkController([nostr_relay_url]) as colleague,
        SdkController([nostr_relay_url]) as stranger,
    ):
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub, colleague.npub])
        me = await daemon_pubkey(daemon)
        target = f"open {site_url}/form.html"
        await stranger.send(me, target)
        await stranger.send(me, target, nip04=True)
        # Another allowed controller (its seal passes the allow-list) signs a seal around a
        # rumor that claims to be from the phone.
        await colleague.publish(forged_wrap(signer_of(colleague), phone.pubkey, me, target))
        # Then one real command: once it is answered, everything before it was processed.
        answer = await phone.command(me, {"tool": "get_url"})
        assert answer["success"]
        assert await commands_run(daemon) == ["get_url"]
        assert await stranger.poll() == [] and await colleague.poll() == []
        assert len(phone.received) == 1
        assert daemon.browser.sessions()[0].owner == phone.pubkey
        assert len(daemon.browser.sessions()) == 1
        # The three did reach the daemon (they were dropped there, not lost on the way).
        await wait_until(lambda: daemon.link.relay_status()[nostr_relay_url].counts["events"] >= 4)
        assert await commands_run(daemon) == ["get_url"] and await stranger.poll() == []


async def test_bad_signatures_run_nothing_and_get_no_reply(permissive_relay, start_daemon):
    async with SdkController([permissive_relay.url]) as phone:
        daemon = await start_daemon([permissive_relay.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        key = signer_of(phone)
        bad_kind4 = tampered(
            finalize_event(
                {
                    "kind": 4,
                    "content": nip04_encrypt(key.secret, me, '{"tool":"open","params":{}}'),
                    "tags": [["p", me]],
                    "created_at": now(),
                },
                key.secret,
            )
        )
        rumor = make_rumor(key.pubkey, 14, '{"tool":"get_title"}', [["p", me]])
        bad_wrap = tampered(await wrap(rumor, key, me))
        async with RelayPool([permissive_relay.url]) as raw:
            for event in (bad_kind4, bad_wrap):
                assert (await raw.publish(event, 5)).ok  # this relay takes anything
        answer = await phone.command(me, {"tool": "get_url"})
        assert answer["success"]
        invalid = daemon.link.relay_status()[permissive_relay.url].counts["invalid"]
        assert invalid == 1, "the kind 4 arrived, and the pool dropped it"
        # The wrap arrived too (the pool checks a wrap's id only), and the inbox dropped it
        # where its signature is verified, before its seal.
        await wait_until(lambda: daemon.link.inbox.status()["bad_signatures"] == 1)
        assert await commands_run(daemon) == ["get_url"]
        assert len(phone.received) == 1


async def test_a_replayed_command_runs_once(nostr_relay_url, local_relay_factory, start_daemon):
    second = await local_relay_factory()
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url, second.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        key = signer_of(phone)
        rumor = make_rumor(key.pubkey, 14, '{"id":"r1","tool":"get_url"}', [["p", me]])
        first = await wrap(rumor, key, me)
        await phone.publish(first)
        await phone.wait_reply(lambda r: r.sender == me)
        # The same rumor in a fresh wrap, and the original wrap again on a relay that has
        # never seen it (a relay would otherwise drop the duplicate itself).
        rewrapped = await wrap(rumor, key, me)
        await phone.publish(rewrapped)
        async with SdkController([second.url], phone.keys) as replayer:
            await replayer.publish(first)
        sync = await phone.command(me, {"tool": "get_title"})
        assert sync["success"]
        assert await seen(daemon.store, rewrapped["id"]), "the new wrap reached the replay guard"
        # The original wrap did come again, through the relay that had never seen it.
        await wait_until(lambda: daemon.link.relay_status()[second.url].counts["events"] >= 1)
        assert await commands_run(daemon) == ["get_title", "get_url"]
        assert [r.json.get("id") for r in phone.received] == ["r1", sync["id"]]


async def test_one_command_through_two_relays_runs_once(
    nostr_relay_url, local_relay_factory, start_daemon
):
    second = await local_relay_factory()
    relays = [nostr_relay_url, second.url]
    async with SdkController(relays) as phone:
        daemon = await start_daemon(relays, controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        answer = await phone.command(me, {"tool": "get_url"})
        nip04 = await phone.command(me, {"tool": "get_url"}, nip04=True)
        assert answer["success"] and nip04["success"]
        sync = await phone.command(me, {"tool": "get_title"})
        assert sync["success"]
        assert await commands_run(daemon) == ["get_title", "get_url", "get_url"]
        assert len(phone.received) == 3
        # Each command did reach the daemon through both relays (or this proves nothing).
        await wait_until(
            lambda: all(daemon.link.relay_status()[url].counts["events"] >= 3 for url in relays)
        )
        assert sum(s.counts["duplicates"] for s in daemon.link.relay_status().values()) >= 3
        assert await commands_run(daemon) == ["get_title", "get_url", "get_url"]


async def test_a_restart_on_the_same_relays_runs_nothing_again(
    nostr_relay_url, start_daemon, tmp_path
):
    state = tmp_path / "kept-state"
    async with SdkController([nostr_relay_url]) as phone:
        first = await start_daemon([nostr_relay_url], [phone.npub], state_dir=state)
        me = await daemon_pubkey(first)
        assert (await phone.command(me, {"tool": "get_url"}))["success"]
        assert (await phone.command(me, {"tool": "get_url"}, nip04=True))["success"]
        await first.stop()
        second = await start_daemon([nostr_relay_url], [phone.npub], state_dir=state)
        assert await daemon_pubkey(second) == me, "the generated identity is kept"
        sync = await phone.command(me, {"tool": "get_title"})
        assert sync["success"]
        assert await commands_run(second) == ["get_title", "get_url", "get_url"]
        # The relay did hand the second daemon the two old commands again (and the new one).
        await wait_until(lambda: second.link.relay_status()[nostr_relay_url].counts["events"] >= 3)
        assert await commands_run(second) == ["get_title", "get_url", "get_url"]
        replies = [json.loads(r.content)["id"] for r in phone.received]
        assert len(replies) == len(set(replies)) == 3


async def test_an_old_command_runs_nothing(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        key = signer_of(phone)
        url = f"{site_url}/form.html"
        command = json.dumps({"id": "old", "tool": "open", "params": {"url": url}})
        # Signed by the controller an hour ago (a captured command, re-sent in a new wrap).
        rumor = make_rumor(key.pubkey, 14, command, [["p", me]], now() - 3600)
        await phone.publish(await wrap(rumor, key, me))
        old = await phone.wait_reply(lambda r: r.sender == me and '"old"' in r.content)
        error = old.json["error"]
        assert error["code"] == "REFUSED" and "freshness" in error["message"]
        where = await phone.command(me, {"tool": "get_url"})
        assert where["data"]["url"] == "about:blank", "the old command did not run"
        assert [(e.tool, e.outcome) for e in await daemon.store.recent(10)] == [
            ("get_url", "ok"),
            ("open", "REFUSED"),
        ]
