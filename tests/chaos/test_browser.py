"""Browser chaos: a killed Chromium, a page that never yields, alert loops, 500 popups and a
1 GB download.  In each, the command in question gets a clear answer and everyone else is
served.  Every wait here is bounded; none asserts how long anything took."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.browser.session import Session
from nostr_browserd.browser.tab import Tab
from nostr_browserd.browser.window import POPUP_BUDGET
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run
from tests.e2e.test_resilience import chromium_main_processes
from tests.fixtures.browser import POLLING, TEST_BROWSER, until_polling
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)

GIB = 1024**3
CHUNK = b"\0" * 65536
PAGES = {
    "/": b'<title>Chaos</title><a id="big" href="/big">the big file</a>',
    "/alerts": b"<title>Alerts</title><script>for (;;) alert('again')</script>",
    "/popups": b"<title>Popups</title><script>"
    b"for (let i = 0; i < 500; i++) window.open('about:blank#' + i)</script>",
}


class ChaosServer(ThreadingHTTPServer):
    """The hostile pages; /big: 1 GiB streamed with no length, counting what it sent; /spin:
    what a page in a busy loop asks each turn (go on, until the test lets it stop)."""

    sent = 0
    finished = threading.Event()
    spinning = threading.Event()
    let_go = threading.Event()


class ChaosHandler(BaseHTTPRequestHandler):
    server: ChaosServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/spin"):
            self.server.spinning.set()
            stop = self.server.let_go.wait(0.05)  # a turn of the loop: no need to hurry
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"stop" if stop else b"spin")
            return
        if self.path.startswith("/big"):
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", 'attachment; filename="big.bin"')
            self.end_headers()
            try:
                for _ in range(GIB // len(CHUNK)):
                    self.wfile.write(CHUNK)
                    self.server.sent += len(CHUNK)
            except OSError:
                pass  # the client stopped it, as it should
            finally:
                self.server.finished.set()
            return
        body = PAGES.get(self.path, b"no such page")
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def chaos() -> Iterator[ChaosServer]:
    server = ChaosServer(("127.0.0.1", 0), ChaosHandler)
    server.sent, server.finished = 0, threading.Event()
    server.spinning, server.let_go = threading.Event(), threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def base(server: ChaosServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


async def send(session: Session, command: str) -> dict:
    return await run(REGISTRY, session, parse_request(command, REGISTRY))


async def test_chromium_killed_mid_command(site_url):
    """The command that was running answers BROWSER_CRASHED; the very next one succeeds."""
    before = chromium_main_processes()
    pool = BrowserPool(BrowserConfig(timeout_ms=30_000, **TEST_BROWSER))
    await pool.start()
    try:
        session = await pool.session("victim")
        (ours,) = chromium_main_processes() - before
        assert (await send(session, f"open {site_url}/index.html"))["success"]
        running = asyncio.create_task(send(session, f"wait_for_fn {POLLING}"))
        await until_polling(session.page)
        os.kill(ours, signal.SIGKILL)
        hit = await asyncio.wait_for(running, 30)
        assert hit["error"]["code"] == "BROWSER_CRASHED", hit
        again = await send(session, f"open {site_url}/form.html")  # told once is enough
        assert again["success"] and again["data"]["title"] == "Form", again
    finally:
        await pool.close()


SPIN = """for (;;) {
  const turn = new XMLHttpRequest();
  turn.open("GET", "/spin", false);
  turn.send();
  if (turn.responseText === "stop") break;
}"""
"""A busy loop that never yields to the page's event loop, until the chaos server says stop."""


async def test_a_page_in_a_busy_loop_holds_only_its_own_command(
    nostr_relay_url, start_daemon, site_url, chaos
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], browser={"command_timeout": 30}
        )
        me = await daemon_pubkey(daemon)
        opened = await phone.command(me, {"tool": "open", "params": {"url": base(chaos)}})
        assert opened["success"], opened
        spin = phone.command(me, {"tool": "eval", "params": {"script": SPIN}}, timeout=60)
        spinning = asyncio.create_task(spin)
        assert await asyncio.to_thread(chaos.spinning.wait, 30), "the page is in its loop"
        # Another controller (the local owner) is served while the page spins: the loop
        # goes on until the answer is here.
        async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
            await ws.send(json.dumps({"id": 1, "tool": "open", "params": {"url": site_url}}))
            while (answer := await ws.recv()).startswith('{"type": "event"'):
                pass
        assert json.loads(answer)["success"], answer
        running = daemon.dispatcher.status()["running"]
        assert running == {phone.pubkey: "eval"}, "the phone's command is still running"
        chaos.let_go.set()
        assert (await spinning)["success"]


async def test_a_page_in_a_busy_loop_is_stopped_at_the_command_timeout(
    nostr_relay_url, start_daemon, site_url
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], browser={"command_timeout": 3}
        )
        me = await daemon_pubkey(daemon)
        assert (await phone.command(me, {"tool": "open", "params": {"url": site_url}}))["success"]
        spin = phone.command(me, {"tool": "eval", "params": {"script": "for (;;) {}"}})
        stopped = await spin
        assert stopped["error"]["code"] == "TIMEOUT" and "3 s" in stopped["error"]["message"]
        # The spinning tab is closed and forgotten: the phone goes on in a fresh one.
        fresh = await phone.command(me, {"tool": "tab_new", "params": {"url": site_url}})
        assert fresh["success"], fresh


async def test_an_alert_loop_is_cut_and_nobody_is_held(call, session, browser_pool, chaos):
    events = []
    session.events.listen(events.append)
    opened = await call(f"open {base(chaos)}/alerts")
    # 20 alerts are accepted; the 21st is left open, and the command says so at once.
    assert opened["success"] and opened["data"]["dialog"]["type"] == "alert", opened
    assert [e["event"] for e in events].count("dialog") == Tab.ALERT_LIMIT + 1
    other = await browser_pool.session("bystander")
    try:
        assert (await send(other, f"open {base(chaos)}/"))["success"]
    finally:
        await other.close()
    assert (await call("dialog_status"))["data"]["dialog"]["type"] == "alert"
    assert (await call("tab_new"))["success"]
    assert (await call("tab_close t1"))["success"]
    assert (await call(f"open {base(chaos)}/"))["success"]


async def test_500_popups_are_bounded(call, session, browser_pool, chaos, monkeypatch):
    """window.open past the budget gets null; past the tab cap, a popup is closed at once."""
    await call(f"open {base(chaos)}/popups")
    listed = await call("tab_list")
    assert listed["success"], listed
    assert len(listed["data"]["tabs"]) == POPUP_BUDGET + 1  # the page and its first 20
    other = await browser_pool.session("bystander")
    try:
        assert (await send(other, f"open {base(chaos)}/"))["success"]
    finally:
        await other.close()
    assert (await call("close_all"))["success"]
    monkeypatch.setattr(session, "MAX_TABS", 5)  # now the cap is lower than the budget
    events = []
    session.events.listen(events.append)
    await call(f"open {base(chaos)}/popups")
    assert len((await call("tab_list"))["data"]["tabs"]) <= 5
    assert [e["event"] for e in events].count("popup_closed") == 1  # said once
    refused = await call("tab_new")
    assert refused["error"]["code"] == "REFUSED" and "close some" in refused["error"]["message"]
    assert (await call("close_all"))["success"]
    assert (await call(f"open {base(chaos)}/"))["success"]


@pytest.fixture
def downloads(browser_pool, tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(browser_pool.config, "downloads_dir", tmp_path / "down")
    monkeypatch.setattr(browser_pool.config, "download_cap", 10 * 1024 * 1024)
    return tmp_path / "down"


def on_disk(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["click", "url"])
async def test_a_1gb_download_is_stopped_at_the_cap(call, session, chaos, downloads, how):
    await call(f"open {base(chaos)}/")
    command = "download #big" if how == "click" else f"download --url {base(chaos)}/big"
    refused = await call(command)
    assert refused["error"]["code"] == "TOO_LARGE", refused
    assert "download_cap" in refused["error"]["message"]
    assert on_disk(downloads) == 0  # nothing kept: not the file, not a part of it
    await asyncio.to_thread(chaos.finished.wait, 30)  # the server saw the transfer stop
    assert chaos.finished.is_set() and chaos.sent < GIB // 2, chaos.sent
    assert (await call("get url"))["success"]
