"""Lanes: a controller's commands in order, each held in the store before it runs."""

import asyncio
import json

from nostr_browserd.errors import BrowserdError


async def test_a_command_that_fails_past_its_reply_does_not_stop_its_controllers_queue(tmp_path):
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.dm.messages import Incoming
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    replies = []

    async def reply(incoming, text, request_id):
        replies.append(request_id)
        return True

    pool = BrowserPool()  # never started: help needs no browser
    dispatcher = local_dispatcher(pool, tmp_path, reply, {pk: ControllerConfig(pubkey=pk)})
    audit, failed = dispatcher.store.audit, []

    async def audit_failing_once(**row):
        if not failed:
            failed.append(row)
            raise RuntimeError("the audit store broke in a way nobody foresaw")
        return await audit(**row)

    dispatcher.store.audit = audit_failing_once
    for i in (1, 2):
        dispatcher.submit(
            Incoming(pk, "nip17", f'{{"id": {i}, "tool": "help"}}', f"{i}" * 64, f"{i}" * 64, 0)
        )
    await dispatcher.close()  # answers what it was given, then stops
    assert failed, "the first command's audit failed"
    assert replies == [1, 2], "the second command was answered after the first one's failure"
    await dispatcher.store.close()


async def test_a_command_is_held_before_it_runs_and_a_failed_hold_is_answered_in_its_turn(
    tmp_path,
):
    """The hold is written while the command waits in its queue, and the queue waits for it:
    a restart would answer the running command as interrupted.  A hold that fails (a full
    disk, a lost database) answers its command UNAVAILABLE, unrun, between its neighbours."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.dm.messages import Incoming
    from nostr_browserd.errors import ErrorCode
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    replies, all_in = [], asyncio.Event()

    async def reply(incoming, text, request_id):
        held = {h.outer_id: h.running for h in await dispatcher.store.unanswered()}
        code = json.loads(text).get("error", {}).get("code")
        replies.append((request_id, code, held.get(incoming.outer_id)))
        if len(replies) == 3:
            all_in.set()
        return True

    pool = BrowserPool()  # never started: help needs no browser
    dispatcher = local_dispatcher(pool, tmp_path, reply, {pk: ControllerConfig(pubkey=pk)})
    hold = dispatcher.store.hold

    async def hold_failing_for_2(**row):
        if row["request_id"] == 2:
            raise BrowserdError(ErrorCode.UNAVAILABLE, "The state store cannot be written.")
        await hold(**row)

    dispatcher.store.hold = hold_failing_for_2
    for i in (1, 2, 3):
        dispatcher.submit(
            Incoming(pk, "nip17", f'{{"id": {i}, "tool": "help"}}', f"{i}" * 64, f"{i}" * 64, 0)
        )
    async with asyncio.timeout(30):
        await all_in.wait()
    assert replies == [(1, None, True), (2, "UNAVAILABLE", None), (3, None, True)]
    assert await dispatcher.store.unanswered() == [], "each answered command is released"
    await dispatcher.close()
    await dispatcher.store.close()


async def test_a_scheduled_command_runs_in_its_controllers_lane_after_what_came_before(tmp_path):
    """A schedule's run waits behind the controller's own commands, and a full lane refuses
    it at once, as it would a message."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.dm.messages import Incoming
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    answered = []

    async def reply(incoming, text, request_id):
        answered.append(request_id)
        return True

    async def scheduled(wire, request_id):
        answered.append(json.loads(wire).get("error", {}).get("code", "scheduled"))
        return True

    pool = BrowserPool()  # never started: help needs no browser
    dispatcher = local_dispatcher(pool, tmp_path, reply, {pk: ControllerConfig(pubkey=pk)})
    for i in (1, 2):
        dispatcher.submit(
            Incoming(pk, "nip17", f'{{"id": {i}, "tool": "help"}}', f"{i}" * 64, f"{i}" * 64, 0)
        )
    dispatcher.lanes.queue_size = 1  # the second still waits: no room for a run
    refused = await dispatcher.scheduled(pk, {"tool": "help"}, deliver=scheduled, attach=None)
    assert refused.response["error"]["code"] == "UNAVAILABLE" and answered == ["UNAVAILABLE"]
    dispatcher.lanes.queue_size = 8
    ran = await dispatcher.scheduled(pk, {"tool": "help"}, deliver=scheduled, attach=None)
    assert ran.response["success"]
    assert answered == ["UNAVAILABLE", 1, 2, "scheduled"], "it ran after the controller's two"
    await dispatcher.close()
    await dispatcher.store.close()
