"""End to end: a scheduled ``ask`` with the scripted model provider, run at its time from a
phone's schedule, its gated step held for the approver exactly as a typed command's would be."""

from __future__ import annotations

import re

from tests.e2e.test_ask import CODE, start
from tests.fixtures.daemon import (
    SdkController,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.fake_provider import call, fake_provider_fixture, say  # noqa: F401

HEADER = "schedule s1 (every 2s):\n"


async def test_a_scheduled_ask_runs_waits_for_its_approver_and_replies(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with (
        SdkController([nostr_relay_url]) as phone,
        SdkController([nostr_relay_url]) as approver,
        SdkController([nostr_relay_url]) as other,
    ):
        controller = {"approver": approver.npub, "ask": {"auto_approve": ["open"]}}
        daemon, me = await start(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
            controller=controller,
            monitors={"min_interval": 1},
            nostr={"controllers": [other.npub]},
        )
        fake_provider.script = [
            call("open", "open the form", url=f"{site_url}/form.html"),
            call("click", "send it", selector="#submit"),
            say("Sent the form."),
        ]
        await phone.send(me, "schedule add every 2s ask send the form on the form page")
        made = await phone.wait_reply(lambda r: r.sender == me, 30)
        assert made.content.startswith("schedule s1 (every 2s, UTC) runs: ask send the form"), made

        # At its time the run's click waits for the approver, as a typed one would.
        asked = await approver.wait_reply(
            lambda r: r.sender == me and bool(CODE.search(r.content)), 60
        )
        assert "click" in asked.content
        code = CODE.search(asked.content)
        assert code is not None

        async def skipped() -> bool:
            kept = await daemon.store.watch("schedule", phone.pubkey, "s1")
            return kept is not None and kept.state.get("skipped", 0) >= 1

        await wait_until(skipped, 60)  # the runs due meanwhile are skipped, not stacked
        assert not [r for r in phone.received if r.content.startswith(HEADER)]
        await approver.send(me, f"approve {code[1]}")
        reply = await phone.wait_reply(
            lambda r: r.sender == me and r.content.startswith(HEADER), 60
        )
        assert "status: done" in reply.content and "Sent the form." in reply.content
        later = await phone.wait_reply(
            lambda r: r.sender == me and r.content.startswith(HEADER), 60
        )
        assert re.search(r"\(\d+ runs? skipped: the run before was still going\)", later.content)

        # Another controller sees none of it and cannot remove it.
        theirs = await other.command(me, {"tool": "schedule_list"})
        assert theirs["data"]["schedules"] == []
        removed = await other.command(me, {"tool": "schedule_remove", "params": {"id": "s1"}})
        assert "You have no schedule s1" in removed["error"]["message"]
        mine = await phone.command(me, {"tool": "schedule_remove", "params": {"id": "s1"}})
        assert mine["success"] and await daemon.store.watch_count(phone.pubkey) == 0
