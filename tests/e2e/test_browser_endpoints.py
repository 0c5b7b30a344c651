"""Browsers from browser servers: placement, the per-endpoint limit, losing a server, status.

The servers are real ``playwright launch-server`` and ``run-server`` processes on loopback
with Debian's Chromium (tests/fixtures/browser_servers.py); the pool is the daemon's own.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from urllib.parse import urlsplit

import pytest

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.egress import EgressProxy
from nostr_browserd.browser.endpoints import Endpoint, endpoint_kind, shown_url
from nostr_browserd.browser.netpolicy import NetworkPolicy
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.daemon.config import ConfigError, load_config
from nostr_browserd.errors import BrowserdError, ErrorCode
from tests.fixtures.browser import (
    POLLING,
    TEST_BROWSER,
    command,
    local_dispatcher,
    until_polling,
)
from tests.fixtures.browser_servers import start_browser_server
from tests.fixtures.daemon import wait_until
from tests.fixtures.leaks import LEAKS


def test_status_shows_no_credentials_path_or_query():
    url = "wss://user:hunter22@browsers-1.example:3000/5f2b9c?token=abc123"
    assert shown_url(url) == "wss://browsers-1.example:3000/…"
    said = Endpoint(url, BrowserConfig()).plain(OSError("no answer from 127.0.0.1:3000/5f2b9c"))
    assert said == "no answer from 127.0.0.1:3000/…"
    assert shown_url("http://[::1]:9222") == "http://[::1]:9222"
    assert endpoint_kind("ws://h:3000/") == "playwright"
    assert endpoint_kind("ws://h:9222/devtools/browser/1b2c") == "cdp"
    assert endpoint_kind("https://h:9222") == "cdp"


def test_config_folds_the_single_endpoints_and_refuses_other_schemes(tmp_path):
    folded = BrowserConfig(ws_endpoint="ws://a:3000/", cdp_endpoint="http://b:9222")
    assert folded.endpoints == ["ws://a:3000/", "http://b:9222"]
    listed = BrowserConfig(endpoints=["ws://a:3000/"], ws_endpoint="ws://a:3000/")
    assert listed.endpoints == ["ws://a:3000/"]
    path = tmp_path / "c.toml"
    path.write_text('[browser]\nendpoints = ["ftp://user:pw@files:21/x"]\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path, {})
    assert "browser.endpoints" in str(refused.value) and "pw" not in str(refused.value)
    path.write_text("[browser]\ncontexts_per_endpoint = 0\n")
    with pytest.raises(ConfigError, match="contexts_per_endpoint"):
        load_config(path, {})


async def pool_on(urls: list[str], **settings) -> BrowserPool:
    executable = BrowserConfig().find_executable()  # what a run-server --unsafe launches
    config = {"timeout_ms": 10_000, "executable": executable, **TEST_BROWSER, **settings}
    pool = BrowserPool(BrowserConfig(endpoints=urls, **config))
    await pool.start()
    return pool


async def test_contexts_spread_over_the_endpoints_and_status_shows_them(browser_servers):
    first = await browser_servers("launch-server")
    second = await browser_servers("run-server")
    LEAKS.secret(urlsplit(first.url).path, "launch-server's random path")
    pool = await pool_on([first.url, second.url])
    try:
        sessions = [await pool.session(f"spread-{n}") for n in range(4)]
        by_endpoint = [s.endpoint for s in sessions]
        assert by_endpoint == [pool.endpoints[0], pool.endpoints[1]] * 2
        assert sessions[0].context.browser is pool.endpoints[0].browser
        status = pool.status()
        assert [e["contexts"] for e in status] == [2, 2]
        assert [e["state"] for e in status] == ["up", "up"]
        assert [e["estimated_mb"] for e in status] == [34.0, 34.0]  # 17 MB a context
        assert status[0]["url"] == shown_url(first.url) and first.url not in str(status)
        await sessions[0].close()
        assert (await pool.session("spread-next")).endpoint is pool.endpoints[0]
    finally:
        await pool.close()


async def test_the_limit_places_elsewhere_then_refuses_clearly(browser_servers, tmp_path):
    first = await browser_servers("launch-server")
    second = await browser_servers("launch-server")
    pool = await pool_on([first.url, second.url], contexts_per_endpoint=1, context_mb=40)
    dispatcher = local_dispatcher(pool, tmp_path)
    try:
        one, two = await pool.session("full-1"), await pool.session("full-2")
        assert {one.endpoint, two.endpoint} == set(pool.endpoints)
        with pytest.raises(BrowserdError) as full:
            await pool.session("full-3")
        assert full.value.code is ErrorCode.UNAVAILABLE
        assert "contexts_per_endpoint" in full.value.message
        window = await command(dispatcher, one, "window_new")
        assert window["error"]["code"] == "UNAVAILABLE", window
        assert [e["limit"] for e in pool.status()] == [1, 1]
        assert [e["estimated_mb"] for e in pool.status()] == [40.0, 40.0]
        await two.close()  # room again: the waiting owner gets it
        assert (await pool.session("full-3")).endpoint is pool.endpoints[1]
    finally:
        await dispatcher.close()
        await dispatcher.store.close()
        await pool.close()


async def test_a_killed_browser_server_moves_its_controllers_with_their_state(
    browser_servers, tmp_path, site_url
):
    first = await browser_servers("launch-server")
    second = await browser_servers("run-server")
    pool = await pool_on([first.url, second.url])
    saved: dict[str, dict] = {}  # what the daemon's store keeps (workers save it)

    async def initial_state(owner: str) -> dict | None:
        return saved.get(owner)

    pool.initial_state = initial_state
    dispatcher = local_dispatcher(pool, tmp_path)
    try:
        victim, bystander = await pool.session("victim"), await pool.session("bystander")
        assert victim.endpoint is pool.endpoints[0] and bystander.endpoint is pool.endpoints[1]
        for session in (victim, bystander):
            assert (await command(dispatcher, session, f"open {site_url}/index.html"))["success"]
        await command(dispatcher, victim, "eval document.cookie = 'logged=in; max-age=600'")
        saved["victim"] = await victim.context.storage_state()
        running = asyncio.create_task(command(dispatcher, victim, f"wait_for_fn {POLLING}"))
        await until_polling(victim.page)
        first.kill()
        hit = await asyncio.wait_for(running, 30)
        assert hit["error"]["code"] == "BROWSER_CRASHED", hit
        await wait_until(lambda: pool.status()[0]["state"] != "up")  # Playwright says so next
        again = await command(dispatcher, victim, f"open {site_url}/index.html")
        assert again["success"], again  # the next command: another endpoint, no second error
        assert victim.endpoint is pool.endpoints[1]
        cookie = await command(dispatcher, victim, "eval document.cookie")
        assert cookie["data"]["result"] == "logged=in", cookie  # its saved state restored
        calm = await command(dispatcher, bystander, "get title")
        assert calm["success"], calm
        assert [e["contexts"] for e in pool.status()] == [0, 2]
    finally:
        await dispatcher.close()
        await dispatcher.store.close()
        await pool.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_with_no_endpoint_up_commands_wait_and_a_server_is_found_again(tmp_path):
    port = free_port()
    url = f"ws://127.0.0.1:{port}/"
    pool = await pool_on([url])  # nothing listens yet: the pool starts and keeps trying
    dispatcher = local_dispatcher(pool, tmp_path)
    try:
        with pytest.raises(BrowserdError) as none:
            await pool.session("early")
        assert none.value.code is ErrorCode.UNAVAILABLE
        assert (
            "No browser endpoint is up" in none.value.message and "127.0.0.1" in none.value.message
        )
        assert pool.status()[0]["state"] == "reconnecting"
        server = await start_browser_server("run-server", tmp_path, port=port)
        try:
            async with asyncio.timeout(60):  # the background retry's backoff, bounded
                while pool.status()[0]["state"] != "up":
                    await asyncio.sleep(0.1)
            session = await pool.session("early")
            assert (await command(dispatcher, session, "get url"))["success"]
        finally:
            await server.stop()
    finally:
        await dispatcher.close()
        await dispatcher.store.close()
        await pool.close()


async def ask(url: str, authorization: str | None) -> bytes:
    """One CONNECT to a private address through the proxy at ``url``: the answer's head."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        extra = f"Proxy-Authorization: {authorization}\r\n" if authorization else ""
        writer.write(f"CONNECT 10.255.255.1:443 HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
        return await asyncio.wait_for(reader.read(4096), 10)
    finally:
        writer.close()


async def test_the_egress_proxy_for_other_machines_wants_its_credential():
    proxy = EgressProxy(NetworkPolicy(True, []))
    remote = await proxy.listen_for_remote("127.0.0.1")
    LEAKS.secret(proxy.password, "the egress proxy's password")
    try:
        owner = "ab" * 32

        def basic(user: str, password: str) -> str:
            return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        right = basic(f"nostr-browserd.{owner}", proxy.password)
        wrong = basic(f"nostr-browserd.{owner}", "guess")
        nobody = basic("nostr-browserd", proxy.password)  # names no owner
        for authorization in (None, wrong, nobody):
            refused = await ask(remote, authorization)
            assert refused.startswith(b"HTTP/1.1 407"), refused
            assert b'Proxy-Authenticate: Basic realm="nostr-browserd"' in refused
        judged = await ask(remote, right)  # past the credential, the policy decides
        assert judged.startswith(b"HTTP/1.1 403") and b"private address" in judged, judged
        loopback = await proxy.url_for(owner)  # the owner's own port: no ask
        assert (await ask(loopback, None)).startswith(b"HTTP/1.1 403")
        assert proxy.credentials(owner)["server"] == remote
    finally:
        await proxy.close()


@pytest.mark.parametrize(
    ("egress_host", "held"),
    [(None, "routes only: redirect hops unseen (set egress_host)"), ("127.0.0.1", None)],
)
async def test_status_says_how_the_policy_holds_on_a_server_elsewhere(
    monkeypatch, caplog, egress_host, held
):
    """A server on another machine reaches the egress proxy only on egress_host: without it,
    the daemon warns at start and status says routes only.  (Nothing is connected to.)"""

    async def not_yet(self, playwright):
        return None  # the server does not answer yet, as at a worker's start

    monkeypatch.setattr(Endpoint, "open", not_yet)
    config = {"endpoints": ["ws://browsers-1.example:3000/p"], "egress_host": egress_host}
    pool = BrowserPool(BrowserConfig(block_private_networks=None, **config))
    with caplog.at_level("WARNING", logger="nostr_browserd.browser.pool"):
        await pool.start()
    try:
        policy = pool.status()[0]["network_policy"]
    finally:
        await pool.close()
    warned = [r.getMessage() for r in caplog.records if "egress_host" in r.getMessage()]
    if held is None:
        assert policy == "egress proxy" and warned == []
    else:
        assert policy == held
        assert warned and "ws://browsers-1.example:3000/…" in warned[0], warned
