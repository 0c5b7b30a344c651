"""End to end: the model hands the browser to the person during ``ask`` (a phone on
nostr-sdk, a real relay, a real Chromium, the test Blossom server, a scripted model).

The turn waits; the person's own commands run meanwhile (a click the server counts), each
held in the store like a queued one; their ``resume`` (text or JSON) gives the turn back, and
a gated step after it still asks.  With no ``resume`` the turn ends after
``[ask] handoff_timeout``, saying so.  Over ContextVM, where nobody could resume, the model
is not offered ``handoff``.
"""

from __future__ import annotations

import json
import secrets
from types import SimpleNamespace

from nostr_browserd.mcp.contextvm_remote import ContextVmBackend
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_ask import CODE, approval, final_reply, message, start
from tests.e2e.test_ask_consent import offered, send_ask
from tests.fixtures.blossom import blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import SdkController, start_daemon_fixture  # noqa: F401
from tests.fixtures.fake_provider import call, fake_provider_fixture, say  # noqa: F401


def handed_over(reply) -> bool:
    return "hands you the browser" in reply.content


async def answer(phone, me, request_id) -> dict:
    """The response to ``request_id`` (not the notice that it waits for its approver)."""
    reply = await message(
        phone, lambda r: r.sender == me and f'"{request_id}"' in r.content and "success" in r.json
    )
    return reply.json


async def serving(start_daemon, relay, phone, fake, approver=None, **kw):
    """A daemon whose model may open unasked, and its pubkey; ``approver``: an npub asked
    instead of the phone."""
    controller = {"ask": {"auto_approve": ["open"]}, **({"approver": approver} if approver else {})}
    return await start(start_daemon, relay, phone, fake, controller=controller, **kw)


async def test_the_person_clicks_while_the_turn_waits_and_resume_finishes_it(
    nostr_relay_url, click_counter, fake_provider, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await serving(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
            files={"blossom_servers": [blossom_server.url]},
        )
        page = click_counter.page("handoff")
        fake_provider.script = [
            call("open", "open the page", url=page),
            call("handoff", "solve the CAPTCHA"),
            call("click", "press it once more", selector="#click"),
            say("Pressed after you."),
        ]
        request_id = await send_ask(phone, me, "press the button after the person")
        told = await message(phone, lambda r: r.sender == me and handed_over(r), 60)
        assert "solve the CAPTCHA" in told.content and "resume" in told.content
        assert "sent as a file message" in told.content
        shots = [r for r in phone.received if r.sender == me and r.kind == 15]
        assert len(shots) == 1 and shots[0].content.startswith(blossom_server.url)

        # The paused turn does not hold the person's queue: their click runs now.
        clicked = await phone.command(me, {"tool": "click", "params": {"selector": "#click"}})
        assert clicked["success"], clicked
        assert click_counter.clicks["handoff"] == 1

        await phone.send(me, "resume")
        await message(phone, lambda r: r.sender == me and "browser again" in r.content)
        # Consent does not change: the model's click after the handoff still asks.
        asked = await message(phone, lambda r: r.sender == me and CODE.search(r.content))
        assert click_counter.clicks["handoff"] == 1, "not clicked before the approve"
        await phone.send(me, f"approve {CODE.search(asked.content)[1]}")
        data = (await final_reply(phone, me, request_id)).json["data"]
        assert data["status"] == "done" and data["answer"] == "Pressed after you."
        assert [s["tool"] for s in data["steps"]] == ["open", "handoff", "click"]
        assert click_counter.clicks["handoff"] == 2
        # The handoff step told the model the person is done, with the page as it is now.
        back = fake_provider.tool_results(2)[-1]
        assert "The person is done" in back and "Click" in back


async def test_without_resume_the_turn_ends_after_the_handoff_timeout(
    nostr_relay_url, click_counter, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await serving(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
            more_ask={"handoff_timeout": 0.5},
        )
        fake_provider.script = [
            call("open", "open the page", url=click_counter.page("late")),
            call("handoff", "type the 2FA code"),
            say("never reached"),
        ]
        request_id = await send_ask(phone, me, "log in")
        data = (await final_reply(phone, me, request_id)).json["data"]
        assert data["status"] == "timeout", data
        assert "resume" in data["reason"] and "0.5 s" in data["reason"]
        assert [s["tool"] for s in data["steps"]] == ["open", "handoff"]
        assert any(handed_over(r) for r in phone.received if r.sender == me)


async def test_ask_stop_ends_a_handed_over_turn_and_another_ask_waits_for_it(
    nostr_relay_url, click_counter, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await serving(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
        )
        fake_provider.script = [
            call("open", "open the page", url=click_counter.page("stop")),
            call("handoff", "choose a seat"),
            say("never reached"),
        ]
        request_id = await send_ask(phone, me, "book a seat")
        await message(phone, lambda r: r.sender == me and handed_over(r), 60)
        second = await phone.command(me, {"tool": "ask", "params": {"task": "something else"}})
        assert not second["success"] and "send resume" in second["error"]["message"]
        await phone.send(me, "ask --stop")
        data = (await final_reply(phone, me, request_id)).json["data"]
        assert data["status"] == "denied" and data["reason"] == "stopped by ask --stop"
        await phone.send(me, "resume")  # nothing waits any more
        await message(phone, lambda r: r.sender == me and "No ask turn waits" in r.content)


async def test_a_command_during_the_handoff_is_held_like_a_queued_one_and_json_resume_ends_it(
    nostr_relay_url, click_counter, fake_provider, start_daemon
):
    """The person's click takes the queue's path beside the paused turn: held in the store
    and started (fenced) before it waits for its approver, with the queue's bound behind it
    (queue_size 1: one command waits, the next is refused); then a JSON resume."""
    async with SdkController([nostr_relay_url]) as phone, SdkController([nostr_relay_url]) as boss:
        daemon, me = await serving(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
            boss.npub,
            browser={"queue_size": 1},
        )
        fake_provider.script = [
            call("open", "open the page", url=click_counter.page("held")),
            call("handoff", "accept the cookie banner"),
            call("get_text", "read the count", selector="#count"),
            say("Read after you."),
        ]
        request_id = await send_ask(phone, me, "read the page after the banner")
        await message(phone, lambda r: r.sender == me and handed_over(r), 60)
        catalog = await phone.command(me, {"tool": "help"})
        assert "resume" in {t["name"] for t in catalog["data"]["tools"]}

        click_id = secrets.token_hex(4)
        click = {"id": click_id, "tool": "click", "params": {"selector": "#click"}}
        await phone.send(me, json.dumps(click))
        asked = await approval(boss, me)
        rows = await daemon.store.unanswered(daemon.dispatcher.lanes.worker_name)
        held = {row.request_id: row for row in rows}
        assert click_id in held, "held in the store: a restart would answer it"
        assert held[click_id].tool == "click" and held[click_id].running, "started, fenced"
        assert held[request_id].running, "the paused turn keeps its own place"
        waits, refused = secrets.token_hex(4), secrets.token_hex(4)
        for request in (waits, refused):
            await phone.send(me, json.dumps({"id": request, "tool": "get_url"}))
        full = await answer(phone, me, refused)
        assert full["error"]["code"] == "UNAVAILABLE" and "waiting" in full["error"]["message"]

        # resume is answered at once; the turn goes on only after the commands before it.
        resume_id = secrets.token_hex(4)
        await phone.send(me, json.dumps({"id": resume_id, "tool": "resume", "params": {}}))
        resumed = await answer(phone, me, resume_id)
        assert resumed["success"] and resumed["data"]["resumed"] is True, resumed
        await boss.send(me, f"approve {CODE.search(asked.content)[1]}")
        assert (await answer(phone, me, click_id))["success"]
        assert (await answer(phone, me, waits))["success"], "it waited behind the click"
        data = (await final_reply(phone, me, request_id)).json["data"]
        assert data["status"] == "done" and data["answer"] == "Read after you."
        assert [s["tool"] for s in data["steps"]] == ["open", "handoff", "get_text"]
        assert click_counter.clicks["held"] == 1
        assert '"text":"1"' in fake_provider.tool_results(3)[-1].replace(" ", ""), "after it"
        assert await daemon.store.unanswered(daemon.dispatcher.lanes.worker_name) == []


async def test_over_contextvm_the_model_is_not_offered_handoff(
    nostr_relay_url, fake_provider, start_daemon
):
    """An MCP client's tools/call waits for one result and reads no chat: nobody would see
    the handoff or send resume."""
    agent = KeySigner.generate()
    client = SimpleNamespace(npub=agent.pubkey)
    _daemon, me = await start(start_daemon, nostr_relay_url, client, fake_provider)
    fake_provider.script = [say("Nothing to do.")]
    cvm = ContextVmBackend(agent, me, [nostr_relay_url])
    await cvm.start()
    try:
        await cvm.call("ask", {"task": "look"}, _no_progress)
    finally:
        await cvm.close()
    tools = offered(fake_provider)
    assert "snapshot" in tools and "handoff" not in tools, tools


async def _no_progress(done: float, total: float | None, message: str) -> None:
    pass
