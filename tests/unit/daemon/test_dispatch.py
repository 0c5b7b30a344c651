"""The composer: what is answered at once, and the entrance of a caller with a request in
hand (a scheduled run) going through admission, running and delivery."""

import json

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import is_text
from nostr_browserd.daemon.dispatch import controls_turn


def test_text_or_json():
    assert is_text("click @e2") and not is_text('  {"tool": "get_url"}')


@pytest.mark.parametrize(
    ("content", "controls"),
    [
        ("resume", True),
        ("Resume", True),  # as a phone capitalises it
        ('{"id": 1, "tool": "resume", "params": {}}', True),
        ("ask --stop", True),
        ("Ask --stop", True),
        ('{"tool": "ask", "params": {"stop": true}}', True),
        ("ask stop the music", False),  # a task that says stop
        ('fill @e1 "resume"', False),
        ("get url", False),
    ],
)
def test_ask_stop_and_resume_are_told_apart_from_other_commands(content, controls):
    """What is answered at once instead of waiting behind the running turn."""
    assert controls_turn(REGISTRY, content) is controls


async def test_a_scheduled_caller_goes_through_every_stage_in_one_call(tmp_path):
    """``perform``: admitted under the controller's role, run, delivered as a message (not
    a reply), audited under the caller's transport; a refused request runs nothing."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.commands.protocol import Request
    from nostr_browserd.daemon.admission import Caller
    from nostr_browserd.daemon.config import ControllerConfig
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    reader = ControllerConfig(pubkey=pk, role="read")
    pool = BrowserPool()  # never started: help needs no browser, and a refusal runs nothing
    dispatcher = local_dispatcher(pool, tmp_path, controllers={pk: reader})
    sent: list[str] = []

    async def deliver(wire, request_id):
        sent.append(wire)
        return True

    caller = Caller.of(pk, reader)
    helped = await dispatcher.perform(
        caller, Request(id=1, tool="help"), transport="schedule", deliver=deliver, as_text=False
    )
    assert helped.response["success"] and helped.response["data"]["role"] == "read"
    refused = await dispatcher.perform(
        caller, Request(id=2, tool="click", params={"selector": "#buy"}), transport="schedule"
    )
    assert refused.response["error"]["code"] == "FORBIDDEN" and pool.sessions() == []
    assert [json.loads(wire)["id"] for wire in sent] == [1], "delivered where it was told"
    audited = [(e.transport, e.tool, e.outcome) for e in await dispatcher.store.recent()]
    assert sorted(audited) == [("schedule", "click", "FORBIDDEN"), ("schedule", "help", "ok")]
    await dispatcher.close()
    await dispatcher.store.close()
