"""End to end: ``ask`` from a phone (nostr-sdk) through a real relay, a real Chromium on the
local test site, and the real provider SDKs pointed at a scripted provider on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import re
import secrets

import pytest

from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.fake_provider import (
    Scripted,
    call,
    fake_provider_fixture,  # noqa: F401
    say,
)
from tests.fixtures.leaks import LEAKS

KEY = "sk-test-e2e-0123456789abcdef"
LEAKS.secret(KEY, "a model provider's API key")
CODE = re.compile(r'"approve ([A-Z0-9]+)"')


async def start(
    start_daemon,
    relay,
    phone,
    fake,
    provider="openai",
    controller=None,
    tools=None,
    more_ask=None,
    **kw,
):
    """A daemon whose ask talks to ``fake``, with an API key stored for ``provider``;
    ``tools``: the ``[ask] tools`` offered instead of the default set; ``more_ask``: other
    ``[ask]`` settings."""
    ask = {
        **(more_ask or {}),
        "provider": provider,
        provider: {"base_url": fake.base_url(provider)},
        "max_retries": 0,
        "progress_interval": 3600,
        **({"tools": tools} if tools else {}),
    }
    entry = {"pubkey": phone.npub, **(controller or {})}
    daemon = await start_daemon([relay], controllers=[entry], ask=ask, **kw)
    await daemon.key_store().set(provider, KEY)
    return daemon, await daemon_pubkey(daemon)


async def ask(phone, me, params):
    """Send ask as JSON; the final reply (by id), skipping progress and approval DMs."""
    request_id = secrets.token_hex(4)
    await phone.send(me, json.dumps({"id": request_id, "tool": "ask", "params": params}))
    return (await final_reply(phone, me, request_id)).json


async def message(phone, predicate, timeout=30.0):
    """The first message matching ``predicate``, among those already polled too (a poll may
    bring several at once, such as "Stopping…" and the turn's final reply)."""
    for seen in phone.received:
        if predicate(seen):
            return seen
    return await phone.wait_reply(predicate, timeout)


async def approval(phone, me):
    """The approval request the daemon sent."""
    return await message(phone, lambda r: r.sender == me and CODE.search(r.content) is not None)


async def final_reply(phone, me, request_id):
    """The reply to the request ``request_id`` (a turn's final one)."""
    return await message(phone, lambda r: r.sender == me and f'"{request_id}"' in r.content, 60)


async def read(phone, me, selector):
    got = await phone.command(me, {"tool": "get_text", "params": {"selector": selector}})
    return got["data"]["text"]


async def test_ask_over_text_ends_done_with_the_page_read(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        controller = {"ask": {"auto_approve": ["open"]}}
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, controller=controller
        )
        fake_provider.script = [
            call("open", "open the form", url=f"{site_url}/form.html"),
            call("get_text", "read the heading", selector="h1"),
            say("The form's heading is Signup."),
        ]
        await phone.send(me, "ask what is the heading of the form page?", nip04=True)
        final = await message(phone, lambda r: r.sender == me and "status: done" in r.content, 60)
        assert final.scheme == "nip04"
        assert "The form's heading is Signup." in final.content
        assert "open" in final.content and "get_text" in final.content
        # The model was sent the page's real text, marked as untrusted data.
        results = fake_provider.tool_results(2)
        assert len(results) == 2 and '"Signup"' in results[1]
        assert all(r.startswith("<untrusted_data") for r in results)
        assert set(fake_provider.keys) == {KEY}
        # A phone gets a few messages, not one per delta: here the first progress line only.
        progress = [r for r in phone.received if r.content.startswith("… ")]
        assert 1 <= len(progress) <= 2
        assert not any(CODE.search(r.content) for r in phone.received)  # open: auto-approved


async def test_a_gated_click_waits_for_approve_by_dm(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        controller = {"ask": {"auto_approve": ["open", "fill", "click"]}}
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, controller=controller
        )
        fake_provider.script = [
            call("open", url=f"{site_url}/form.html"),
            call("fill", "your name", selector="#name", value="Ada"),
            call("click", "send the form as asked", selector="#submit"),
            say("Sent the form for Ada."),
        ]
        request_id = secrets.token_hex(4)
        await phone.send(
            me, json.dumps({"id": request_id, "tool": "ask", "params": {"task": "sign up as Ada"}})
        )
        # open and fill ran unasked (auto_approve); the click on "Send" reads like a commit.
        asked = await message(
            phone, lambda r: r.sender == me and CODE.search(r.content) is not None
        )
        assert 'button "Send"' in asked.content and "form.html" in asked.content
        assert "send the form as asked" in asked.content
        await phone.send(me, f"approve {CODE.search(asked.content)[1]}")
        final = await message(
            phone, lambda r: r.sender == me and f'"{request_id}"' in r.content, 60
        )
        data = final.json["data"]
        assert data["status"] == "done" and data["answer"] == "Sent the form for Ada."
        assert [s["tool"] for s in data["steps"]] == ["open", "fill", "click"]
        assert data["steps"][2]["target"].startswith('button "Send"')
        assert await read(phone, me, "#out") == "sent Ada"


async def test_a_denial_ends_denied_with_the_page_unchanged(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await start(start_daemon, nostr_relay_url, phone, fake_provider)
        opened = await phone.command(
            me, {"tool": "open", "params": {"url": f"{site_url}/buttons.html"}}
        )
        assert opened["success"]
        fake_provider.script = [call("click", "count once", selector="#count"), say("never")]
        request_id = secrets.token_hex(4)
        await phone.send(
            me, json.dumps({"id": request_id, "tool": "ask", "params": {"task": "click count"}})
        )
        asked = await message(
            phone, lambda r: r.sender == me and CODE.search(r.content) is not None
        )
        assert 'button "Count"' in asked.content
        await phone.send(me, f"deny {CODE.search(asked.content)[1]}")
        final = await message(
            phone, lambda r: r.sender == me and f'"{request_id}"' in r.content, 60
        )
        data = final.json["data"]
        assert data["status"] == "denied" and data["steps"][0]["outcome"].startswith("DENIED")
        assert await read(phone, me, "#count") == "Count"  # never clicked
        # The conversation is still valid: the next ask continues it, on the other wire format.
        fake_provider.script = [say("Understood, nothing was clicked.")]
        again = await ask(phone, me, {"task": "ok, what happened?", "provider": "openai"})
        assert again["data"]["status"] == "done"
        assert "Not run: denied" in json.dumps(fake_provider.requests[-1])


async def test_the_13th_call_ends_capped(nostr_relay_url, site_url, fake_provider, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, provider="anthropic"
        )
        fake_provider.script = [call("get_url", f"look {i}") for i in range(13)]
        data = (await ask(phone, me, {"task": "look around forever"}))["data"]
        assert data["status"] == "capped" and len(data["steps"]) == 12
        assert len(fake_provider.requests) == 13  # the 13th call was asked for, and not run


async def test_a_provider_500_ends_error_with_the_reason(
    nostr_relay_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await start(start_daemon, nostr_relay_url, phone, fake_provider)
        fake_provider.script = [Scripted(status=500)]
        data = (await ask(phone, me, {"task": "anything"}))["data"]
        assert data["status"] == "error" and "HTTP 500" in data["reason"]
        assert KEY not in json.dumps(data)
        # The daemon keeps running: a plain command still works.
        assert (await phone.command(me, {"tool": "get_url"}))["success"]


async def test_ask_stop_ends_a_turn_waiting_for_consent(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await start(start_daemon, nostr_relay_url, phone, fake_provider)
        await phone.command(me, {"tool": "open", "params": {"url": f"{site_url}/buttons.html"}})
        fake_provider.script = [call("click", selector="#count")]
        request_id = secrets.token_hex(4)
        await phone.send(
            me, json.dumps({"id": request_id, "tool": "ask", "params": {"task": "click"}})
        )
        await approval(phone, me)
        await phone.send(me, "ask --stop")
        stopping = await message(phone, lambda r: r.sender == me and "Stopping" in r.content)
        assert stopping.scheme == "nip17"
        final = await message(
            phone, lambda r: r.sender == me and f'"{request_id}"' in r.content, 60
        )
        assert final.json["data"]["status"] == "denied"
        assert "stopped" in final.json["data"]["reason"]
        assert await read(phone, me, "#count") == "Count"
        nothing = await phone.command(me, {"tool": "ask", "params": {"stop": True}})
        assert nothing["data"]["stopped"] is False


async def test_a_restart_keeps_the_conversation_and_new_forgets_it(
    nostr_relay_url, fake_provider, start_daemon, tmp_path
):
    state = tmp_path / "kept"
    async with SdkController([nostr_relay_url]) as phone:
        daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, state_dir=state
        )
        fake_provider.script = [say("The secret word is heron.")]
        assert (await ask(phone, me, {"task": "remember a word"}))["data"]["status"] == "done"
        await daemon.stop()
        daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, state_dir=state
        )
        fake_provider.script = [say("It was heron.")]
        assert (await ask(phone, me, {"task": "which word?"}))["data"]["answer"] == "It was heron."
        sent = json.dumps(fake_provider.requests[-1]["messages"])
        assert "remember a word" in sent and "The secret word is heron." in sent
        fake_provider.script = [say("fresh")]
        await ask(phone, me, {"task": "start over", "new": True})
        sent = json.dumps(fake_provider.requests[-1]["messages"])
        assert "heron" not in sent and "start over" in sent


@pytest.mark.parametrize("tool", ["keys_status", "keys_set"])
async def test_key_tools_never_run_over_messages(
    nostr_relay_url, fake_provider, start_daemon, tool
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon, me = await start(start_daemon, nostr_relay_url, phone, fake_provider)
        params = (
            {"provider": "openai", "api_key": "sk-evil-0123456789abcdefgh"}
            if tool == "keys_set"
            else {}
        )
        refused = await phone.command(me, {"tool": tool, "params": params})
        assert refused["error"]["code"] == "FORBIDDEN"
        assert await daemon.key_store().get("openai") == KEY


async def test_keys_on_the_local_channel_never_leak(
    nostr_relay_url, start_daemon, caplog, tmp_path
):
    from websockets.asyncio.client import connect

    secret = "sk-local-channel-0123456789abcdef"
    LEAKS.secret(secret, "an API key sent on the local channel")
    daemon = await start_daemon([nostr_relay_url], state_dir=tmp_path / "state")
    caplog.set_level(logging.DEBUG, logger="nostr_browserd")  # ours; websockets logs headers
    token = daemon.local_token_path.read_text().strip()
    url = f"ws://127.0.0.1:{daemon.local.port}/agent"
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        set_key = {
            "id": 1,
            "tool": "keys_set",
            "params": {"provider": "openrouter", "api_key": secret},
        }
        await ws.send(json.dumps(set_key))
        answers = [json.loads(await ws.recv())]
        await ws.send(json.dumps({"id": 2, "tool": "keys_status"}))
        answers.append(json.loads(await ws.recv()))
    assert answers[0]["success"] and answers[1]["data"]["keys"]["openrouter"].startswith("set")
    assert await daemon.key_store().get("openrouter") == secret
    everything = [
        json.dumps(answers),
        json.dumps(await daemon.status(), default=str),
        json.dumps([e.to_dict() for e in await daemon.store.recent(10)], default=str),
        caplog.text,
    ]
    assert not any(secret in text for text in everything)
    assert [
        p
        for p in (tmp_path / "state").rglob("*")
        if p.is_file() and secret.encode() in p.read_bytes()
    ] == []


async def test_the_keys_cli_goes_through_the_running_daemon(
    nostr_relay_url, start_daemon, tmp_path
):
    """The CLI's config names another identity: only the daemon's own key can decrypt what
    the CLI stored, so a readable key shows the command went through the local channel."""
    import asyncio
    import sys
    from pathlib import Path

    from nostr_browserd.daemon.keyfile import write_new_key

    daemon = await start_daemon([nostr_relay_url], state_dir=tmp_path / "state")
    other = tmp_path / "other.nsec"
    write_new_key(other)
    config = tmp_path / "cli.toml"
    config.write_text(
        f'[identity]\nnsec_file = "{other}"\n[state]\ndir = "{tmp_path / "state"}"\n'
        f"[local]\nport = {daemon.local.port}\n"
    )
    cli = str(Path(sys.executable).with_name("nostr-browserd"))
    process = await asyncio.create_subprocess_exec(
        cli,
        "keys",
        "--config",
        str(config),
        "set",
        "openai",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(KEY.encode()), 60)
    assert process.returncode == 0, err
    assert KEY.encode() not in out + err
    assert await daemon.key_store().get("openai") == KEY


async def test_with_an_approver_the_approver_is_asked_not_the_controller(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone, SdkController([nostr_relay_url]) as boss:
        controller = {"approver": boss.npub, "ask": {"auto_approve": ["open"]}}
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, controller=controller
        )
        fake_provider.script = [
            call("open", url=f"{site_url}/buttons.html"),
            call("click", "count once", selector="#count"),
            say("Counted."),
        ]
        request_id = secrets.token_hex(4)
        task = {"id": request_id, "tool": "ask", "params": {"task": "count"}}
        await phone.send(me, json.dumps(task))
        asked = await approval(boss, me)
        assert 'button "Count"' in asked.content and "count once" in asked.content
        await boss.send(me, f"approve {CODE.search(asked.content)[1]}")
        final = await final_reply(phone, me, request_id)
        assert final.json["data"]["status"] == "done"
        assert not any(CODE.search(r.content) for r in phone.received)  # only the approver
        assert await read(phone, me, "#count") == "Clicked 1"


async def asked_or_answered(phone, me, request_id):
    """The first of an approval prompt and the turn's final reply (the step ran unasked)."""
    return await message(
        phone,
        lambda r: (
            r.sender == me
            and (CODE.search(r.content) is not None or f'"{request_id}"' in r.content)
        ),
        60,
    )


@pytest.mark.parametrize(
    "step",
    [
        # Playwright's locator text says get_by_test_id("place-order") ...
        {"tool": "click", "selector": "[data-testid=place-order]"},
        # ... and locator("#plain") for the second of two buttons named "Place order".
        {"tool": "click", "selector": "#plain"},
        # Enter in a text field submits its form, however the field is named.
        {"tool": "press", "selector": "#coupon", "key": "Enter"},
    ],
    ids=["test-id", "twin", "enter-in-a-field"],
)
async def test_a_commit_asks_however_the_page_names_it(
    nostr_relay_url, fake_provider, start_daemon, click_counter, step
):
    name = step["tool"] + "-" + secrets.token_hex(2)
    async with SdkController([nostr_relay_url]) as phone:
        controller = {"ask": {"auto_approve": ["open", "click", "press"]}}
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, controller=controller
        )
        args = {k: v for k, v in step.items() if k != "tool"}
        fake_provider.script = [
            call("open", url=click_counter.page(name, "shop.html")),
            call(step["tool"], "finish the order", **args),
            say("Ordered."),
        ]
        request_id = secrets.token_hex(4)
        task = {"id": request_id, "tool": "ask", "params": {"task": "order it"}}
        await phone.send(me, json.dumps(task))
        asked = await asked_or_answered(phone, me, request_id)
        assert CODE.search(asked.content), f"ran unasked: {asked.content}"
        shown = 'textbox "Coupon"' if step["tool"] == "press" else 'button "Place order"'
        assert f"{step['tool']} {shown} ({args['selector']})" in asked.content, asked.content
        assert "get_by_" not in asked.content and "locator(" not in asked.content
        assert click_counter.loads[name] == 1 and click_counter.clicks[name] == 0
        await phone.send(me, f"deny {CODE.search(asked.content)[1]}")
        final = await final_reply(phone, me, request_id)
        assert final.json["data"]["status"] == "denied"
        assert click_counter.clicks[name] == 0  # counted on the server: nothing was sent


async def test_the_models_second_snapshot_of_a_tab_is_a_delta(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        controller = {"ask": {"auto_approve": ["open", "check"]}}
        _daemon, me = await start(
            start_daemon, nostr_relay_url, phone, fake_provider, controller=controller
        )
        fake_provider.script = [
            call("open", url=f"{site_url}/form.html"),
            call("snapshot", "read the form", interactive=True),
            call("check", "agree", selector="#agree"),
            call("snapshot", "see what changed", interactive=True),
            say("Agreed."),
        ]
        data = await ask(phone, me, {"task": "tick Agree"})
        assert data["data"]["status"] == "done", data
        _open, whole, _check, delta = fake_provider.tool_results(4)
        assert 'textbox \\"Email\\"' in whole and "[delta" not in whole
        assert "[delta since this tab's last snapshot" in delta and "1 changed (~)" in delta
        assert 'checkbox \\"Agree\\" [checked]' in delta and 'textbox \\"Email\\"' not in delta
