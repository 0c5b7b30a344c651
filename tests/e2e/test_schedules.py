"""End to end: a scheduled ``ask`` with the scripted model provider, run at its time from a
phone's schedule, its gated step held for the approver exactly as a typed command's would be;
a run takes its place in the controller's lane, after the command running there."""

from __future__ import annotations

import asyncio
import json
import re

from nostr_browserd.daemon.store import AuditEntry
from tests.e2e.test_ask import CODE, final_reply, message, start
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.fake_provider import (  # noqa: F401
    Scripted,
    call,
    fake_provider_fixture,
    say,
)

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


async def test_a_run_due_while_the_controllers_command_waits_runs_after_it_in_its_lane(
    nostr_relay_url, site_url, start_daemon
):
    async with (
        SdkController([nostr_relay_url]) as phone,
        SdkController([nostr_relay_url]) as approver,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[{"pubkey": phone.npub, "approver": approver.npub}],
            monitors={"min_interval": 1},
        )
        me = await daemon_pubkey(daemon)
        made = await phone.command(
            me, {"tool": "schedule_add", "params": {"when": "every 2s", "command": "get url"}}
        )
        assert made["success"], made

        async def runs() -> list[AuditEntry]:
            """The scheduled runs and the controller's open, oldest first."""
            rows = reversed(await daemon.store.recent(200))
            return [r for r in rows if r.transport == "schedule" or r.tool == "open"]

        # The controller's own open waits for its approver: a slow command in its lane.
        opening = asyncio.create_task(
            phone.command(
                me, {"tool": "open", "params": {"url": f"{site_url}/form.html"}}, timeout=60
            )
        )
        asked = await approver.wait_reply(
            lambda r: r.sender == me and bool(CODE.search(r.content)), 60
        )
        before = len(await runs())

        async def due_meanwhile() -> bool:
            kept = await daemon.store.watch("schedule", phone.pubkey, "s1")
            skipped = kept is not None and kept.state.get("skipped", 0) >= 1
            return skipped or len(await runs()) > before

        await wait_until(due_meanwhile, 60)  # a run fell due while the open waits
        code = CODE.search(asked.content)
        assert code is not None
        await approver.send(me, f"approve {code[1]}")
        assert (await opening)["success"]

        async def ran_after() -> bool:
            return (await runs())[-1].transport == "schedule"

        await wait_until(ran_after, 60)
        order = await runs()
        at = next(i for i, r in enumerate(order) if r.tool == "open")
        assert at == before, f"a scheduled run went beside the controller's open: {order}"
        assert order[-1].outcome == "ok", order[-1]


async def test_a_scheduled_ask_during_the_controllers_ask_waits_its_turn(
    nostr_relay_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, monitors={"min_interval": 1}
        )
        # The first turn holds while its model writes; the second continues the conversation.
        fake_provider.script = [Scripted(text="First answer.", hold=True), say("Second answer.")]
        made = await phone.command(
            me,
            {"tool": "schedule_add", "params": {"when": "every 2s", "command": "ask say hello"}},
        )
        assert made["success"], made
        request_id = "mine"
        await phone.send(
            me, json.dumps({"id": request_id, "tool": "ask", "params": {"task": "say hi"}})
        )
        await wait_until(fake_provider.holding.is_set, 60)

        async def due_meanwhile() -> bool:
            kept = await daemon.store.watch("schedule", phone.pubkey, "s1")
            skipped = kept is not None and kept.state.get("skipped", 0) >= 1
            return skipped or len(fake_provider.requests) >= 2

        await wait_until(due_meanwhile, 60)  # the other turn fell due while this one runs
        fake_provider.release.set()
        mine = (await final_reply(phone, me, request_id)).json
        scheduled = await message(
            phone, lambda r: r.sender == me and r.content.startswith(HEADER), 60
        )
        assert "INTERNAL" not in json.dumps(mine) and "INTERNAL" not in scheduled.content
        assert mine["success"] and mine["data"]["status"] == "done", mine
        assert "status: done" in scheduled.content, scheduled.content
        # One turn after the other: the second was sent the first one's answer.
        assert "First answer." in json.dumps(fake_provider.requests[1]), "the turns overlapped"
