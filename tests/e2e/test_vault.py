"""End to end: the credential vault over DMs (nostr-sdk phones, a real relay, real Chromium on
the local test site served on two loopback origins), through ``ask`` with a scripted model,
and through the CLI and a change of identity.

Every value used here is registered with the suite's secrets scan, which looks for them in
every reply, status page, log, store and file after the run (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
from pathlib import Path
from typing import Any

import pyotp

from nostr_browserd.daemon.keyfile import write_new_key
from nostr_browserd.daemon.local_ws import OWNER
from nostr_browserd.vault.entry import origin_of
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.fake_provider import (
    call,
    fake_provider_fixture,  # noqa: F401
    say,
)
from tests.fixtures.leaks import LEAKS

USER = "vault-e2e-user-ada"
PASSWORD = "vault-e2e-Pw-9x4Kq"
TOTP = "KRSXG5CUIFBEKWLWMFXWY3DUMU2DGMJS"
VALUES = (USER, PASSWORD, TOTP)
for _value, _what in zip(VALUES, ("username", "password", "TOTP secret"), strict=True):
    LEAKS.secret(_value, f"a vault entry's {_what}")
API_KEY = "sk-test-vault-0123456789abcdef"
LEAKS.secret(API_KEY, "a model provider's API key")
CODE = re.compile(r'"approve ([A-Z0-9]+)"')
FIELDS_JS = "() => ['#user', '#pass', '#code'].map(s => document.querySelector(s).value)"


async def run(phone: SdkController, me: str, tool: str, **params: Any) -> dict[str, Any]:
    return await phone.command(me, {"tool": tool, "params": params})


async def add(phone: SdkController, me: str, name: str, *origins: str) -> None:
    added = await run(
        phone, me, "vault_add", name=name, origins=list(origins), username=USER,
        password=PASSWORD, totp=TOTP,
    )  # fmt: skip
    assert added["success"], added


def outcome(response: dict[str, Any]) -> dict[str, Any]:
    """What a fill said, without the page state every reply carries."""
    return {k: response["data"][k] for k in ("entry", "filled", "ok")}


def no_value_in(*texts: str) -> bool:
    return not any(value in text for text in texts for value in VALUES)


async def fields(daemon: Any, owner: str, frame: str | None = None) -> list[str]:
    """The login fields' values, read in the browser itself (never through a reply)."""
    page = daemon.browser.existing(owner).page
    scope = page.frame(name=frame) if frame else page
    return await scope.evaluate(FIELDS_JS)


def code_is_current(code: str) -> bool:
    return pyotp.TOTP(TOTP).verify(code, valid_window=1)


async def test_a_phone_adds_lists_and_fills_only_on_the_entrys_origin(
    nostr_relay_url, site_url, site2_url, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone, SdkController([nostr_relay_url]) as other:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub, other.npub])
        me = await daemon_pubkey(daemon)
        # Typed on the phone, as a person would; the reply holds no value, and says that the
        # chat app keeps its own copy of the message.
        await phone.send(me, f"vault add site --origin {site_url} {USER} {PASSWORD} {TOTP}")
        added = await phone.wait_reply(lambda r: r.sender == me)
        assert "site" in added.content and "chat app keeps its own copy" in added.content
        assert no_value_in(added.content)
        listed = await run(phone, me, "vault_list")
        assert listed["data"]["entries"] == [
            {"name": "site", "origins": [origin_of(site_url)], "totp": True, "usable": True}
        ]
        # On its own origin: refused while a trace records the window (its DOM snapshots
        # would keep the value), else the field decides which value it takes.
        assert (await run(phone, me, "open", url=f"{site_url}/vault_login.html"))["success"]
        assert (await run(phone, me, "trace_start"))["success"]
        traced = await run(phone, me, "fill_credential", selector="#pass", name="site")
        assert traced["error"]["code"] == "REFUSED" and "trace" in traced["error"]["message"]
        assert (await run(phone, me, "trace_stop"))["success"]
        for selector, part in (("#user", "username"), ("#pass", "password"), ("#code", "totp")):
            filled = await run(phone, me, "fill_credential", selector=selector, name="site")
            assert outcome(filled) == {"entry": "site", "filled": part, "ok": True}, filled
        user, password, code = await fields(daemon, phone.pubkey)
        assert (user, password) == (USER, PASSWORD) and code_is_current(code)
        # What the page holds is never shown back: get_value and snapshot mask it.
        got = await run(phone, me, "get_value", selector="#user")
        assert got["data"]["value"] == "••••••••" and "vault" in got["data"]["note"]
        snapshot = await run(phone, me, "snapshot")
        shown = json.dumps(snapshot)
        assert "textbox" in shown and no_value_in(shown) and code not in shown
        # A trace's DOM snapshots would keep the values: no trace in a window holding them.
        traced = await run(phone, me, "trace_start")
        assert traced["error"]["code"] == "REFUSED" and "vault" in traced["error"]["message"]
        # A page that changes a value it was given is told apart, and nothing is submitted.
        assert (await run(phone, me, "open", url=f"{site_url}/rewrite.html"))["success"]
        rewritten = (await run(phone, me, "login_with", name="site"))["data"]
        assert rewritten["filled"] == ["username"] and rewritten["submitted"] is False
        assert "MISMATCH" in rewritten["note"] and "the password" in rewritten["note"]
        # On another origin (another port of the same host): refused, naming what it saw.
        assert (await run(phone, me, "open", url=f"{site2_url}/vault_login.html"))["success"]
        refused = await run(phone, me, "fill_credential", selector="#pass", name="site")
        assert refused["error"]["code"] == "REFUSED"
        assert f"the page is on {origin_of(site2_url)}" in refused["error"]["message"]
        assert await fields(daemon, phone.pubkey) == ["", "", ""]
        # Another controller has a vault of its own, empty, and cannot reach the phone's.
        assert (await run(other, me, "vault_list"))["data"]["entries"] == []
        assert (await run(other, me, "open", url=f"{site_url}/vault_login.html"))["success"]
        theirs = await run(other, me, "fill_credential", selector="#pass", name="site")
        assert (
            theirs["error"]["code"] == "INVALID_PARAMS" and "no entry" in theirs["error"]["message"]
        )
        assert await fields(daemon, other.pubkey) == ["", "", ""]
        assert (await run(other, me, "vault_remove", name="site"))["error"][
            "code"
        ] == "INVALID_PARAMS"
        assert (await run(phone, me, "vault_remove", name="site"))["data"]["removed"] == "site"
        assert (await run(phone, me, "vault_list"))["data"]["entries"] == []


async def test_inside_a_cross_origin_iframe_both_origins_must_be_the_entrys(
    nostr_relay_url, site_url, site2_url, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        await add(phone, me, "outer", site_url)
        await add(phone, me, "inner", site2_url)
        await add(phone, me, "both", site_url, site2_url)
        url = f"{site_url}/vault_frame.html?src={site2_url}/vault_login.html"
        assert (await run(phone, me, "open", url=url))["success"]
        assert (await run(phone, me, "wait_for", selector="#inner"))["success"]
        assert (await run(phone, me, "frame_switch", name="inner"))["success"]
        assert (await run(phone, me, "wait_for", selector="#pass"))["success"]
        outer = await run(phone, me, "fill_credential", selector="#pass", name="outer")
        assert f"the field's frame is on {origin_of(site2_url)}" in outer["error"]["message"]
        inner = await run(phone, me, "fill_credential", selector="#pass", name="inner")
        assert f"the page is on {origin_of(site_url)}" in inner["error"]["message"]
        assert await fields(daemon, phone.pubkey, frame="inner") == ["", "", ""]
        # A form that says method="get" would put the value in the address: refused.
        assert (await run(phone, me, "tab_new", url=f"{site_url}/vault_get.html"))["success"]
        sent_in_url = await run(phone, me, "fill_credential", selector="#pass", name="outer")
        assert 'method="get"' in sent_in_url.get("error", {}).get("message", ""), sent_in_url
        assert (await run(phone, me, "tab_close"))["success"]
        assert (await run(phone, me, "frame_switch", name="inner"))["success"]
        both = await run(phone, me, "fill_credential", selector="#pass", name="both")
        assert outcome(both) == {"entry": "both", "filled": "password", "ok": True}, both
        assert await fields(daemon, phone.pubkey, frame="inner") == ["", PASSWORD, ""]


async def test_one_browser_shared_by_every_controller_has_no_vault(nostr_relay_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], browser={"isolation": "shared"}
        )
        me = await daemon_pubkey(daemon)
        for tool, params in (
            ("vault_list", {}),
            ("fill_credential", {"selector": "#x", "name": "a"}),
        ):
            refused = await run(phone, me, tool, **params)
            assert refused["error"]["code"] == "UNAVAILABLE" and "per controller" in str(refused)


async def approve(approver: SdkController, me: str) -> str:
    """Approve the next approval request; returns its text."""
    asked = await approver.wait_reply(lambda r: r.sender == me and CODE.search(r.content))
    await approver.send(me, f"approve {CODE.search(asked.content)[1]}")
    return asked.content


async def approved(agent: SdkController, approver: SdkController, me: str, tool: str, **params):
    """Run a gated command that the approver approves; (its response, the prompt's text)."""
    running = asyncio.create_task(run(agent, me, tool, **params))
    prompt = await approve(approver, me)
    return await running, prompt


async def test_the_approver_reads_which_value_goes_where_and_login_with_submits(
    nostr_relay_url, site_url, start_daemon
):
    async with SdkController([nostr_relay_url]) as agent, SdkController([nostr_relay_url]) as phone:
        controller = {"pubkey": agent.npub, "name": "agent", "approver": phone.npub}
        daemon = await start_daemon([nostr_relay_url], controllers=[controller])
        me = await daemon_pubkey(daemon)
        params = {"name": "site", "origins": [site_url], "username": USER, "password": PASSWORD}
        added, prompt = await approved(agent, phone, me, "vault_add", **params, totp=TOTP)
        assert added["success"] and "vault_add" in prompt and no_value_in(prompt)
        url = f"{site_url}/vault_login.html"
        assert (await approved(agent, phone, me, "open", url=url))[0]["success"]
        filled, prompt = await approved(
            agent, phone, me, "fill_credential", selector="#pass", name="site"
        )
        assert filled["data"]["ok"]
        assert f'fill the password of `site` into textbox "Password" (#pass) on {url}' in prompt
        logged_in, prompt = await approved(agent, phone, me, "login_with", name="site")
        assert f"log in with `site` on {url}" in prompt and "submit the form" in prompt
        data = logged_in["data"]
        assert data["filled"] == ["username", "password", "totp"] and data["submitted"]
        page = daemon.browser.existing(agent.pubkey).page
        sent = await page.evaluate("() => window.submitted")
        assert (sent["user"], sent["pass"]) == (USER, PASSWORD) and code_is_current(sent["code"])
        assert await page.text_content("#who") == "Signed in"
        assert no_value_in(json.dumps(logged_in), prompt)


async def test_ask_fills_a_login_and_the_model_never_receives_a_value(
    nostr_relay_url, site_url, fake_provider, start_daemon
):
    async with SdkController([nostr_relay_url]) as phone:
        ask = {
            "provider": "openai",
            "openai": {"base_url": fake_provider.base_url("openai")},
            "max_retries": 0,
            "progress_interval": 3600,
        }
        auto = ["open"]  # a vault fill is never auto-approved (the config refuses it)
        controller = {"pubkey": phone.npub, "ask": {"auto_approve": auto}}
        daemon = await start_daemon([nostr_relay_url], controllers=[controller], ask=ask)
        await daemon.key_store().set("openai", API_KEY)
        me = await daemon_pubkey(daemon)
        await add(phone, me, "site", site_url)
        url = f"{site_url}/vault_login.html"
        fake_provider.script = [
            call("open", url=url),
            call("vault_list", "which logins do I have"),
            call("fill_credential", "the password first", selector="#pass", name="site"),
            call("login_with", "sign in", name="site"),
            call("snapshot", "check the result"),
            say("Signed in with the site entry."),
        ]
        request_id = secrets.token_hex(4)
        task = {"id": request_id, "tool": "ask", "params": {"task": "sign in to the site"}}
        await phone.send(me, json.dumps(task))
        # fill_credential asks (where the value goes), and login_with, which submits, too.
        prompt = await approve(phone, me)
        assert "fill the password of `site`" in prompt and no_value_in(prompt)
        prompt = await approve(phone, me)
        assert "log in with `site`" in prompt and no_value_in(prompt)
        final = await phone.wait_reply(lambda r: f'"{request_id}"' in r.content, 60)
        data = final.json["data"]
        assert data["status"] == "done", data
        tools = [s["tool"] for s in data["steps"]]
        assert tools == ["open", "vault_list", "fill_credential", "login_with", "snapshot"]
        sent = await daemon.browser.existing(phone.pubkey).page.evaluate("() => window.submitted")
        assert (sent["user"], sent["pass"]) == (USER, PASSWORD)
        # The model saw the entry's name and origin, and no value, in any request it got.
        bodies = [json.dumps(body) for body in fake_provider.requests]
        assert len(bodies) == 6
        assert any("site" in b and origin_of(site_url) in b for b in fake_provider.tool_results(2))
        assert no_value_in(*bodies) and not any(sent["code"] in b for b in bodies)
        assert "Signed in" in bodies[-1]


async def cli(config: Path, *args: str, stdin: str = "") -> tuple[int, str]:
    """``nostr-browserd vault … --config config``; (exit code, stdout and stderr)."""
    binary = str(Path(sys.executable).with_name("nostr-browserd"))
    process = await asyncio.create_subprocess_exec(
        binary, "vault", "--config", str(config), *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    LEAKS.output(out + err, "the vault CLI's output")
    assert process.returncode is not None
    return process.returncode, (out + err).decode()


async def local(daemon: Any, tool: str, **params: Any) -> dict[str, Any]:
    """A command on the daemon's local channel (the local owner's vault)."""
    request = json.dumps({"id": "1", "tool": tool, "params": params})
    return json.loads(await daemon.dispatcher.handle_local(OWNER, request))


async def test_the_cli_goes_through_the_daemon_and_a_new_identity_cannot_open_the_vault(
    nostr_relay_url, site_url, start_daemon, tmp_path
):
    """The CLI's config names another identity than the daemon's: an entry the daemon can
    open shows that ``vault add`` went through its local channel and its signer."""
    state = tmp_path / "state"
    daemon = await start_daemon([nostr_relay_url], state_dir=state)
    other = tmp_path / "other.nsec"
    write_new_key(other)
    config = tmp_path / "cli.toml"
    config.write_text(
        f'[identity]\nnsec_file = "{other}"\n[state]\ndir = "{state}"\n'
        f"[local]\nport = {daemon.local.port}\n"
    )
    code, out = await cli(
        config, "add", "site", "--origin", site_url, stdin=f"{USER}\n{PASSWORD}\n{TOTP}\n"
    )
    assert code == 0 and f"site: {origin_of(site_url)}, with a TOTP" in out, out
    assert no_value_in(out)
    assert (await local(daemon, "open", url=f"{site_url}/vault_login.html"))["success"]
    assert (await local(daemon, "fill_credential", selector="#pass", name="site"))["data"]["ok"]
    code, out = await cli(config, "add", "bad", "--origin", site_url, stdin=f"{USER}\n")
    assert code == 1 and "2 or 3 lines" in out
    await daemon.stop()
    # No daemon: the CLI logs in with its own config's identity, which did not seal it.
    code, out = await cli(config, "list")
    assert code == 0 and "sealed to another identity" in out, out
    # The daemon started again under another identity cannot open the entry either.
    daemon = await start_daemon(
        [nostr_relay_url], state_dir=state, identity={"nsec_file": str(other)}
    )
    assert (await local(daemon, "vault_list"))["data"]["entries"][0]["usable"] is False
    assert (await local(daemon, "open", url=f"{site_url}/vault_login.html"))["success"]
    refused = await local(daemon, "fill_credential", selector="#pass", name="site")
    assert "cannot be opened by this identity" in refused["error"]["message"]
    assert await fields(daemon, OWNER) == ["", "", ""]
    code, out = await cli(config, "remove", "site")
    assert code == 0 and "removed site" in out
