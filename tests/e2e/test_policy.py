"""End to end: roles, batches, and an approver's consent for an agent's gated commands."""

import asyncio
import json
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from nostr_browserd.errors import ErrorCode
from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip19 import nsec_encode
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    seen,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.site import serving

CODE = re.compile(r'"approve ([A-Z0-9]+)"')


async def test_read_role_and_tool_lists(nostr_relay_url, site_url, start_daemon):
    async with (
        SdkController([nostr_relay_url]) as reader,
        SdkController([nostr_relay_url]) as lister,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[
                {"pubkey": reader.npub, "role": "read"},
                {"pubkey": lister.npub, "role": ["get_url"]},
            ],
        )
        me = await daemon_pubkey(daemon)
        url = f"{site_url}/form.html"
        refused = await reader.command(me, {"tool": "open", "params": {"url": url}})
        assert refused["error"]["code"] == ErrorCode.FORBIDDEN
        assert (await reader.command(me, {"tool": "get_url"}))["success"]
        assert (await lister.command(me, {"tool": "get_url"}))["success"]
        other = await lister.command(me, {"tool": "get_title"})
        assert other["error"]["code"] == ErrorCode.FORBIDDEN
        assert all(
            e.tool != "open" or e.outcome == "FORBIDDEN" for e in await daemon.store.recent()
        )


async def test_login_tools_never_run_over_messages(nostr_relay_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        other = nsec_encode(generate_secret())
        for tool, params in [
            ("login_status", {}),
            ("logout", {}),
            ("login", {"method": "local", "nsec": other}),
            ("switch_identity", {"method": "local", "nsec": other}),
        ]:
            answer = await phone.command(me, {"tool": tool, "params": params})
            assert answer["error"]["code"] == ErrorCode.FORBIDDEN, (tool, answer)
            assert other not in json.dumps(answer)
        assert daemon.identity.logged_in and await daemon_pubkey(daemon) == me


async def test_a_batch_is_judged_by_every_command_in_it(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[{"pubkey": phone.npub, "role": "read"}]
        )
        me = await daemon_pubkey(daemon)
        url = f"{site_url}/form.html"
        smuggled = [{"tool": "get_url"}, {"tool": "open", "params": {"url": url}}]
        refused = await phone.command(me, {"tool": "batch", "params": {"commands": smuggled}})
        assert refused["error"]["code"] == ErrorCode.FORBIDDEN
        reads = [{"tool": "get_url"}, {"tool": "get_title"}]
        answer = await phone.command(me, {"tool": "batch", "params": {"commands": reads}})
        assert answer["success"], answer
        assert [r["tool"] for r in answer["data"]["results"]] == ["get_url", "get_title"]
        session = daemon.browser.sessions()[0]
        assert session.page.url == "about:blank", "the refused batch ran nothing"


async def agent_and_phone(nostr_relay_url, start_daemon, timeout=60):
    agent = await SdkController([nostr_relay_url]).__aenter__()
    phone = await SdkController([nostr_relay_url]).__aenter__()
    daemon = await start_daemon(
        [nostr_relay_url],
        controllers=[
            {
                "pubkey": agent.npub,
                "name": "agent",
                "approver": phone.npub,
                "approval_timeout": timeout,
            }
        ],
    )
    return agent, phone, daemon, await daemon_pubkey(daemon)


async def approve(phone, me, verdict="approve"):
    """Wait for the approval request, answer it; returns the request's text."""
    ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
    code = CODE.search(ask.content)[1]
    await phone.send(me, f"{verdict} {code}")
    return ask.content


async def test_gated_commands_wait_for_the_approver(nostr_relay_url, site_url, start_daemon):
    agent, phone, _, me = await agent_and_phone(nostr_relay_url, start_daemon)
    try:
        url = f"{site_url}/form.html"
        opening = asyncio.create_task(
            agent.command(me, {"tool": "open", "params": {"url": url}}, timeout=30)
        )
        asked = await approve(phone, me)
        assert asked.startswith("agent asks to run open") and url in asked
        assert (await opening)["success"]
        # A free tool runs without asking.
        snap = await agent.command(me, {"tool": "snapshot", "params": {"interactive": True}})
        line = next(x for x in snap["data"]["snapshot"].splitlines() if 'button "Send"' in x)
        ref = "@" + line.split(" @")[-1].split(":")[0]
        clicking = asyncio.create_task(
            agent.command(me, {"tool": "click", "params": {"ref": ref}}, timeout=30)
        )
        asked = await approve(phone, me)
        assert "click" in asked and 'button "Send"' in asked and f"on {url}" in asked
        assert (await clicking)["success"]
        # Denied: the agent is told, and nothing ran.
        typing = asyncio.create_task(
            agent.command(
                me, {"tool": "fill", "params": {"selector": "#name", "value": "x"}}, timeout=30
            )
        )
        await approve(phone, me, "deny")
        denied = await typing
        assert denied["error"]["code"] == ErrorCode.DENIED
        # The field's live value (fill never changes the HTML attribute): still empty.
        value = await agent.command(me, {"tool": "get_value", "params": {"selector": "#name"}})
        assert value["success"] and value["data"]["value"] == "", value
    finally:
        await agent.__aexit__(None, None, None)
        await phone.__aexit__(None, None, None)


async def test_an_unanswered_approval_is_denied(nostr_relay_url, start_daemon):
    agent, phone, _, me = await agent_and_phone(nostr_relay_url, start_daemon, timeout=1)
    try:
        answer = await agent.command(me, {"tool": "reload"}, timeout=30)
        assert answer["error"]["code"] == ErrorCode.DENIED
        assert "did not answer" in answer["error"]["message"]
        # A late "approve" finds nothing to approve.
        ask = next(r for r in await phone.poll() + phone.received if "approve" in r.content)
        await phone.send(me, f"approve {CODE.search(ask.content)[1]}")
        late = await phone.wait_reply(lambda r: r.sender == me and "No command" in r.content)
        assert late
    finally:
        await agent.__aexit__(None, None, None)
        await phone.__aexit__(None, None, None)


async def test_a_command_over_its_time_is_stopped(nostr_relay_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], browser={"command_timeout": 0.5}
        )
        me = await daemon_pubkey(daemon)
        slow = await phone.command(me, {"tool": "wait", "params": {"ms": 5000}})
        assert slow["error"]["code"] == ErrorCode.TIMEOUT
        assert (await phone.command(me, {"tool": "get_url"}))["success"], "and the next one runs"


async def test_a_flood_is_refused_not_queued_forever(nostr_relay_url, start_daemon, gate):
    handler, base = gate
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], browser={"queue_size": 1}
        )
        me = await daemon_pubkey(daemon)
        assert (await phone.command(me, {"tool": "open", "params": {"url": f"{base}/page"}}))[
            "success"
        ]
        # The first command runs until the test releases the gate (an event, not a duration).
        until = {"text": "released", "timeout_ms": 20000}
        first = await phone.send(
            me, json.dumps({"id": 0, "tool": "wait_for_text", "params": until})
        )
        await wait_until(lambda: seen(daemon.store, first))
        # Running, so out of the queue: the queue is empty again.
        await wait_until(lambda: phone.pubkey in daemon.dispatcher.status()["running"])
        # While it runs, one more fits in the queue (size 1), and the next one does not.
        later = [await phone.send(me, json.dumps({"id": i, "tool": "get_url"})) for i in (1, 2)]
        await wait_until(lambda: seen(daemon.store, *later))
        assert not handler.released.is_set()
        handler.released.set()
        replies = {}
        async with asyncio.timeout(30):
            while len(replies) < 3:
                for reply in await phone.poll():
                    replies[reply.json["id"]] = reply.json
                await asyncio.sleep(0.05)
        assert replies[0]["success"] and replies[1]["success"], replies
        assert replies[2]["error"]["code"] == ErrorCode.UNAVAILABLE, replies[2]


class GateHandler(BaseHTTPRequestHandler):
    """/page polls /state, which says "released" once someone opened /release."""

    released = threading.Event()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/release":
            self.released.set()
            body = b"<title>Released</title><p>released</p>"
        elif self.path == "/state":
            body = b"released" if self.released.is_set() else b"waiting"
        else:
            body = (
                b"<title>Gate</title><p id=s>waiting</p><script>setInterval(async () => {"
                b"document.getElementById('s').textContent = await (await fetch('/state'))"
                b".text()}, 50)</script>"
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def gate():
    """A GateHandler of its own on a free port: ``(handler, base URL)``."""
    handler = type("Gate", (GateHandler,), {"released": threading.Event()})
    with serving(handler) as url:
        yield handler, url


async def test_one_controllers_commands_in_order_controllers_concurrently(
    nostr_relay_url, start_daemon, gate
):
    handler, base = gate
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as bob,
    ):
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub, bob.npub])
        me = await daemon_pubkey(daemon)
        opened = await alice.command(me, {"tool": "open", "params": {"url": f"{base}/page"}})
        assert opened["success"], opened
        # Alice's first command waits for what only Bob's command can bring about; her
        # second is queued behind it.
        until = {"text": "released", "timeout_ms": 10000}
        waiting = {"id": "a1", "tool": "wait_for_text", "params": until}
        reading = {"id": "a2", "tool": "get_text", "params": {"selector": "#s"}}
        await alice.send(me, json.dumps(waiting))
        second = await alice.send(me, json.dumps(reading))
        async with asyncio.timeout(20):
            while not await seen(daemon.store, second):
                await asyncio.sleep(0.02)
        assert not handler.released.is_set()
        # Bob is not held up behind Alice (or her first command would time out first).
        released = await bob.command(me, {"tool": "open", "params": {"url": f"{base}/release"}})
        assert released["success"] and released["data"]["title"] == "Released", released
        replies = {}
        async with asyncio.timeout(30):
            while len(replies) < 2:
                for reply in await alice.poll():
                    replies[reply.json["id"]] = reply.json
                await asyncio.sleep(0.05)
        assert replies["a1"]["success"], replies["a1"]
        # a2 arrived before the release; it ran after a1 had finished, so it reads it.
        assert replies["a2"]["data"]["text"] == "released", replies["a2"]
        sessions = {s.owner: s for s in daemon.browser.sessions()}
        assert sessions[alice.pubkey].context is not sessions[bob.pubkey].context
        assert (await bob.command(me, {"tool": "get_url"}))["data"]["url"] == f"{base}/release"


class CountingHandler(BaseHTTPRequestHandler):
    """Counts the requests it serves (what a held command would cost the site)."""

    hits: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b"<title>Counted</title><p>counted</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_only_the_approver_can_approve(nostr_relay_url, start_daemon, caplog):
    caplog.set_level(logging.INFO)
    handler = type("Counting", (CountingHandler,), {"hits": []})
    with serving(handler) as base:
        url = f"{base}/counted"
        async with (
            SdkController([nostr_relay_url]) as agent,
            SdkController([nostr_relay_url]) as phone,
            SdkController([nostr_relay_url]) as other,
            SdkController([nostr_relay_url]) as stranger,
        ):
            daemon = await start_daemon(
                [nostr_relay_url],
                controllers=[
                    {"pubkey": agent.npub, "name": "agent", "approver": phone.npub},
                    {"pubkey": other.npub, "name": "other"},
                ],
            )
            me = await daemon_pubkey(daemon)
            opening = asyncio.create_task(
                agent.command(me, {"tool": "open", "params": {"url": url}}, timeout=60)
            )
            ask = await phone.wait_reply(lambda r: r.sender == me and "approve" in r.content)
            code = CODE.search(ask.content)[1]
            not_yours = f"No command is waiting for your decision on code {code}."

            def told(r):
                return r.sender == me and r.content == not_yours

            # The agent approves its own command: a guess, answered as one (read by the poll
            # of its pending command), and its approver hears of it.
            await agent.send(me, f"approve {code}")
            guessed = await phone.wait_reply(lambda r: r.sender == me and "agent sent" in r.content)
            await wait_until(lambda: any(map(told, agent.received)))
            # Another controller: a guess too.
            await other.send(me, f"approve {code}")
            assert (await other.wait_reply(lambda r: r.sender == me)).content == not_yours
            # A stranger: dropped at the door, never answered.
            await stranger.send(me, f"approve {code}")
            await wait_until(lambda: f"unknown key {stranger.pubkey}" in caplog.text)
            assert not opening.done(), "still held"
            assert handler.hits == [], "the site saw nothing"
            session = next(s for s in daemon.browser.sessions() if s.owner == agent.pubkey)
            assert session.page.url == "about:blank"
            assert [r for r in phone.received if r.sender == me] == [ask, guessed]
            # The status page shows who waits for whom, and which tool: never the code.
            waiting = (await daemon.status())["approvals"]
            assert [(a["tool"], a["controller"], a["approver"]) for a in waiting] == [
                ("open", agent.npub, phone.npub)
            ]
            assert code not in json.dumps(await daemon.status())
            # Only then the approver.
            await phone.send(me, f"approve {code}")
            opened = await opening
            assert opened["success"] and opened["data"]["title"] == "Counted", opened
            assert handler.hits == ["/counted"]
            assert await stranger.poll() == []


async def test_the_approver_sees_each_target_by_role_and_name_in_a_batch_too(
    nostr_relay_url, start_daemon, click_counter
):
    agent, phone, _, me = await agent_and_phone(nostr_relay_url, start_daemon)
    try:
        page = {"tool": "open", "params": {"url": click_counter.page("prompt", "shop.html")}}
        opening = asyncio.create_task(agent.command(me, page, timeout=30))
        await approve(phone, me)
        assert (await opening)["success"]
        # Playwright's locator text would be get_by_test_id("place-order").
        click = {"tool": "click", "params": {"selector": "[data-testid=place-order]"}}
        clicking = asyncio.create_task(agent.command(me, click, timeout=30))
        asked = await approve(phone, me, "deny")
        assert 'click button "Place order" ([data-testid=place-order]) on http' in asked
        assert "get_by_test_id" not in asked
        assert (await clicking)["error"]["code"] == ErrorCode.DENIED
        # A batch: each command on a line, each target by role and name, never raw JSON.
        commands = [
            {"tool": "fill", "params": {"selector": "#coupon", "value": "TEN"}},
            {"tool": "press", "params": {"selector": "#coupon", "key": "Enter"}},
        ]
        batch = {"tool": "batch", "params": {"commands": commands}}
        batching = asyncio.create_task(agent.command(me, batch, timeout=30))
        asked = await approve(phone, me, "deny")
        assert "a batch of 2 commands:\n" in asked, asked
        assert '\n1. fill textbox "Coupon" (#coupon) {"value": "TEN"}\n' in asked
        assert '\n2. press textbox "Coupon" (#coupon) {"key": "Enter"}\n' in asked
        assert '"commands"' not in asked
        assert (await batching)["error"]["code"] == ErrorCode.DENIED
        assert click_counter.loads["prompt"] == 1 and click_counter.clicks["prompt"] == 0
    finally:
        await agent.__aexit__(None, None, None)
        await phone.__aexit__(None, None, None)
