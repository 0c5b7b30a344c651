"""The daemon's local side: login tools on the loopback channel, read-only identity, reload."""

import asyncio
import json
import logging
import os

import pytest
from websockets.asyncio.client import connect

from nostr_browserd.cli.main import fetch_status
from nostr_browserd.errors import BrowserdError
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip19 import npub_encode, nsec_encode
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)


async def local(daemon, request: dict | str):
    async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
        await ws.send(request if isinstance(request, str) else json.dumps(request))
        while (answer := await ws.recv()).startswith('{"type": "event"'):
            pass  # events the command caused are pushed before its reply
    return answer if isinstance(request, str) else json.loads(answer)


async def test_login_tools_on_the_local_channel(nostr_relay_url, start_daemon, caplog):
    caplog.set_level(logging.INFO)
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        old = await daemon_pubkey(daemon)
        status = await local(daemon, {"id": 1, "tool": "login_status"})
        assert status["data"]["npub"] == npub_encode(old) and status["data"]["can_sign"]
        secret = generate_secret()
        new = public_key_hex(secret)
        switched = await local(
            daemon,
            {
                "id": 2,
                "tool": "switch_identity",
                "params": {"method": "local", "nsec": nsec_encode(secret)},
            },
        )
        assert switched["data"]["pubkey"] == new
        # The Nostr side follows the new identity: it answers DMs sent to the new key.
        await wait_until(lambda: daemon.link is not None and daemon.link.pubkey == new)
        await wait_until(lambda: daemon.link.listening)
        assert (await phone.command(new, {"tool": "get_url"}))["success"]
        logged_out = await local(daemon, {"id": 3, "tool": "logout"})
        assert logged_out["data"]["logged_in"] is False
        await wait_until(lambda: daemon.dm_state().startswith("off"))
        refused = await local(daemon, {"id": 4, "tool": "get_url"})
        assert refused["error"]["code"] == "NOT_LOGGED_IN", "logged out means logged out"
        audit = json.dumps([e.to_dict() for e in await daemon.store.recent(20)])
        assert nsec_encode(secret) not in audit and "switch_identity" in audit
        assert "switch_identity" in caplog.text and nsec_encode(secret) not in caplog.text


async def test_read_only_identity_serves_the_local_channel_and_says_why(
    nostr_relay_url, start_daemon, site_url
):
    npub = npub_encode(public_key_hex(generate_secret()))
    daemon = await start_daemon([nostr_relay_url], identity={"method": "readonly", "npub": npub})
    state = await daemon.status()
    assert state["identity"]["readonly"] and state["direct_messages"].startswith("off: ")
    assert "cannot read or answer direct messages" in state["direct_messages"]
    assert not daemon.link.listening
    opened = await local(daemon, f"open {site_url}/form.html")
    assert "form.html" in opened
    http_status = await asyncio.to_thread(fetch_status, daemon.local.port, daemon.local.token)
    assert http_status["identity"]["npub"] == npub
    assert http_status["recent"][0]["tool"] == "open"
    # The status page's fields (version, identity, relays, tabs, uptime).
    assert {"version", "identity", "relays", "tabs", "uptime"} <= set(http_status)
    assert http_status["relays"][nostr_relay_url]["state"] == "connected"
    assert http_status["tabs"] == [
        {"owner": "local", "tab": "t1", "url": f"{site_url}/form.html", "active": True}
    ]


async def test_reload_applies_a_new_allow_list(nostr_relay_url, start_daemon, tmp_path, caplog):
    async with SdkController([nostr_relay_url]) as phone:
        config = tmp_path / "config.toml"
        config.write_text(f'[nostr]\nrelays = ["{nostr_relay_url}"]\n')
        daemon = await start_daemon([nostr_relay_url])
        daemon.config_path = config
        me = await daemon_pubkey(daemon)
        await phone.send(me, "get url")
        await wait_until(lambda: f"unknown key {phone.pubkey}" in caplog.text)
        config.write_text(
            f'[nostr]\nrelays = ["{nostr_relay_url}"]\ncontrollers = ["{phone.npub}"]\n'
        )
        daemon.reload()
        assert (await phone.command(me, {"tool": "get_url"}))["success"]
        assert [e.tool for e in await daemon.store.recent()] == ["get_url"], "the first was dropped"
        config.write_text("[nostr]\nfreshness = -1\n")
        daemon.reload()  # a broken file keeps the current allow-list
        assert phone.pubkey in daemon.dispatcher.controllers
        # A reload that removes the key takes its right away again.
        config.write_text(f'[nostr]\nrelays = ["{nostr_relay_url}"]\n')
        daemon.reload()
        assert phone.pubkey not in daemon.dispatcher.controllers
        await phone.send(me, "get title")
        unknown = f"unknown key {phone.pubkey}"
        await wait_until(lambda: caplog.text.count(unknown) == 2)
        assert [e.tool for e in await daemon.store.recent()] == ["get_url"], "dropped once more"


def test_login_params_for_each_way_of_holding_the_key(tmp_path):
    from nostr_browserd.daemon.app import login_params
    from nostr_browserd.daemon.config import IdentityConfig, NsignerConfig
    from nostr_browserd.login.params import LocalLogin, NsignerLogin, SeedLogin

    generated = login_params(IdentityConfig(), tmp_path)
    assert generated == LocalLogin(method="local", nsec_file=tmp_path / "identity.nsec")
    assert (tmp_path / "identity.nsec").stat().st_mode & 0o777 == 0o600
    assert login_params(IdentityConfig(nsec_env="K"), tmp_path).nsec_env == "K"
    assert login_params(IdentityConfig(credential="nsec"), tmp_path).credential == "nsec"
    seed = IdentityConfig(method="seed", seed_file="/s", account=2)
    assert login_params(seed, tmp_path) == SeedLogin(method="seed", seed_file="/s", account=2)
    qube = IdentityConfig(method="nsigner", nsigner=NsignerConfig(device="vault", index=3))
    assert login_params(qube, tmp_path) == NsignerLogin(method="nsigner", device="vault", index=3)


async def test_the_local_token_from_a_credential_mode_checked(
    nostr_relay_url, start_daemon, tmp_path, monkeypatch
):
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    token = credentials / "local-token"
    token.write_text("from-systemd\n")
    token.chmod(0o644)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    with pytest.raises(BrowserdError, match="chmod 600"):
        await start_daemon([nostr_relay_url], local={"credential": "local-token"})
    token.chmod(0o600)
    daemon = await start_daemon([nostr_relay_url], local={"credential": "local-token"})
    assert daemon.local.token == "from-systemd"
    assert not (daemon.state_dir / "local-token").exists()
    assert (await local(daemon, "get url")).startswith("[t1]")


async def test_the_daemon_serves_while_its_browser_launches(nostr_relay_url, tmp_path):
    """The local channel starts while Chromium launches, the relays once it is up (and the
    local owner's first window made); a command that comes before the browser is up waits
    for it and is answered, and READY waits for both."""
    from nostr_browserd.browser.config import BrowserConfig
    from nostr_browserd.daemon.app import Daemon
    from tests.fixtures.daemon import daemon_config

    launched, gate = tmp_path / "launched", tmp_path / "gate"
    os.mkfifo(gate)
    chromium = tmp_path / "chromium"  # holds the launch until the test opens the gate
    chromium.write_text(
        f'#!/bin/sh\ntouch "{launched}"\nread _ < "{gate}"\n'
        f'exec "{BrowserConfig().find_executable()}" "$@"\n'
    )
    chromium.chmod(0o700)
    config = daemon_config(
        tmp_path / "state", [nostr_relay_url], browser={"executable": str(chromium)}
    )
    daemon = Daemon(config)
    starting = asyncio.create_task(daemon.start())
    opened = False

    def open_gate() -> None:
        with gate.open("w") as writer:
            writer.write("go\n")

    try:
        await wait_until(launched.exists)
        await wait_until(lambda: daemon.local is not None and daemon.local.port != 0)
        assert daemon.link is None  # the relays wait for the browser
        async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
            await ws.send(json.dumps({"id": 1, "tool": "get_url"}))
            assert not starting.done()  # the browser is still held at the gate
            await asyncio.to_thread(open_gate)
            opened = True
            while (answer := json.loads(await ws.recv())).get("type") == "event":
                pass
        assert answer["success"], answer
        assert answer["data"]["tab"] == "t1"
        await starting
        assert daemon.link is not None and daemon.link.listening
    finally:
        if not opened:
            await asyncio.to_thread(open_gate)
        await asyncio.gather(starting, return_exceptions=True)
        await daemon.stop()


async def test_the_local_channel_answers_before_the_relays_start(tmp_path):
    """The local channel comes up before the relays (the embedded one first), and answers
    its first commands as it will once they are up: a browser command, and a monitor tool
    by the monitors' own answer, not "no monitors here"."""
    from nostr_browserd.daemon.app import Daemon
    from tests.fixtures.daemon import daemon_config
    from tests.fixtures.relays import free_port

    reached, go = asyncio.Event(), asyncio.Event()

    class HeldRelays(Daemon):
        async def _embedded_relay(self) -> None:
            reached.set()  # the relays' start begins here; held until the test has asked
            await go.wait()
            await super()._embedded_relay()

    port = free_port()
    config = daemon_config(
        tmp_path / "state", [], nostr={"embedded_relay": True, "embedded_relay_port": port}
    )
    daemon = HeldRelays(config)
    starting = asyncio.create_task(daemon.start())
    held = asyncio.create_task(reached.wait())
    try:
        await asyncio.wait({starting, held}, return_when=asyncio.FIRST_COMPLETED)
        assert reached.is_set() and not starting.done(), starting
        assert daemon.local is not None, "the local channel is up before the relays start"
        url = await local(daemon, {"id": 1, "tool": "get_url"})
        assert url["success"] and url["data"]["tab"] == "t1", url
        early = await local(daemon, {"id": 2, "tool": "monitor_list"})
        assert daemon.embedded is None and daemon.link is None  # still no relay at all
        go.set()
        await starting
        assert daemon.link is not None and daemon.relays[0] == f"ws://127.0.0.1:{port}"
        later = await local(daemon, {"id": 2, "tool": "monitor_list"})
        assert early == later, (early, later)
    finally:
        held.cancel()
        go.set()
        await asyncio.gather(starting, return_exceptions=True)
        await daemon.stop()


async def test_the_relays_start_once_the_local_owners_first_window_is_made(tmp_path):
    """The local channel opens while Chromium still launches (as on a cold start); the relays'
    start (the embedded relay, the connections, the ContextVM side's imports: a fifth of a
    second of CPU, much of it with the GIL held) took the CPU from the launch and the local
    owner's first window, which its first command needs, so it begins once that window is
    made.  Here the launch is held until the local channel is up."""
    from playwright.async_api import async_playwright

    from nostr_browserd.browser.endpoints import launch_early
    from nostr_browserd.daemon.app import Daemon
    from tests.fixtures.daemon import daemon_config
    from tests.fixtures.relays import free_port

    launched: list[float] = []
    window_made: list[bool] = []

    class Watched(Daemon):
        async def _embedded_relay(self) -> None:
            assert self.core is not None
            spare = self.core.browser._spare  # the first window: made, or taken already
            window_made.append(self.core.browser._started.is_set() and (not spare or spare.done()))
            await super()._embedded_relay()

    config = daemon_config(
        tmp_path / "state", [], nostr={"embedded_relay": True, "embedded_relay_port": free_port()}
    )
    driver = asyncio.ensure_future(async_playwright().start())

    async def launch_once_the_local_channel_is_up():
        await wait_until(lambda: any(s[0] == "local channel" for s in daemon.timeline.spans))
        try:
            return await launch_early(driver, config.browser)
        finally:
            launched.append(daemon.timeline.now())

    daemon = Watched(config, early=asyncio.ensure_future(launch_once_the_local_channel_is_up()))
    try:
        await daemon.start()
        began = {name: start for name, start, _ in daemon.timeline.spans}
        summary = daemon.timeline.summary()
        assert launched and launched[0] <= began["relays"] <= began["contextvm imports"], summary
        assert window_made == [True], summary
        assert daemon.link is not None and daemon.link.listening
        url = await local(daemon, {"id": 1, "tool": "get_url"})
        assert url["success"] and url["data"]["tab"] == "t1", url
    finally:
        await daemon.stop()
