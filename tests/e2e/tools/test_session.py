"""Sessions: one context per owner, crash recovery, events, tabs and popups."""

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, async_playwright

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.endpoints import launch_early
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.browser.window import Window
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run
from tests.fixtures.browser import TEST_BROWSER, command, local_dispatcher
from tests.fixtures.site import serving


async def test_owners_do_not_share_cookies(browser_pool, dispatcher, site_url):
    alice = await browser_pool.session("alice-test")
    bob = await browser_pool.session("bob-test")
    try:
        assert alice.context is not bob.context
        await command(dispatcher, alice, f"open {site_url}/index.html")
        await command(dispatcher, bob, f"open {site_url}/index.html")
        await command(dispatcher, alice, "eval document.cookie = 'who=alice'")
        theirs = await command(dispatcher, bob, "eval document.cookie")
        assert theirs["data"]["result"] == ""
        mine = await command(dispatcher, alice, "eval document.cookie")
        assert mine["data"]["result"] == "who=alice"
        assert await browser_pool.session("alice-test") is alice
    finally:
        await alice.close()
        await bob.close()


async def test_killed_browser_is_relaunched(browser_pool, dispatcher, site_url):
    session = await browser_pool.session("crash-test")
    try:
        assert (await command(dispatcher, session, f"open {site_url}/index.html"))["success"]
        cdp = await browser_pool.browser.new_browser_cdp_session()
        with pytest.raises(PlaywrightError):  # the browser dies mid-call
            await cdp.send("Browser.crash")
        hit = await command(dispatcher, session, "get title")
        assert hit["success"] is False and hit["error"]["code"] == "BROWSER_CRASHED", hit
        again = await command(dispatcher, session, f"open {site_url}/form.html")
        assert again["success"], again
        assert again["data"]["title"] == "Form"
        assert browser_pool.alive
    finally:
        await session.close()


async def test_a_pool_takes_the_browser_launched_before_it(tmp_path, site_url):
    """``run`` starts Playwright and launches Chromium before the pool exists; the pool places
    contexts on that browser, launches no second one, and closes it."""
    config = BrowserConfig(**TEST_BROWSER)
    early = asyncio.ensure_future(launch_early(async_playwright().start(), config))
    pool = BrowserPool(config, early=early)
    _, endpoint = await early
    launched = endpoint.browser
    await pool.start()
    try:
        assert pool.browser is launched and launched.is_connected()
        session = await pool.session("early")
        opened = await command(local_dispatcher(pool, tmp_path), session, f"open {site_url}")
        assert opened["success"], opened
        assert session.context.browser is launched
    finally:
        await pool.close()
    assert not launched.is_connected()


async def loaded_status(page, url: str) -> int | None:
    """The HTTP status of ``url`` loaded in ``page`` directly (past open's own check): the
    egress proxy refuses a private address with a 403."""
    response = await page.goto(url)
    return None if response is None else response.status


@contextlib.asynccontextmanager
async def spare_pool(
    block_private_networks: bool | None,
) -> AsyncIterator[tuple[BrowserPool, Window]]:
    """A started pool that makes the local owner's window before it asks, and that window."""
    config = BrowserConfig(**{**TEST_BROWSER, "block_private_networks": block_private_networks})
    pool = BrowserPool(config, spare_for="local")
    await pool.start()
    try:
        assert pool._spare is not None
        yield pool, await pool._spare
    finally:
        await pool.close()


async def test_the_spare_window_goes_to_its_owner_under_the_network_policy(site_url):
    """The window made before the local owner asks is the one its session gets, with the
    policy a fresh one would have: the egress proxy refuses its tab a loopback address."""
    async with spare_pool(True) as (pool, spare):
        session = await pool.session("local")
        assert session.context is spare.context and session.tab is not None
        assert await loaded_status(session.tab.page, f"{site_url}/index.html") == 403


def count_title_reads(page: Page) -> list[str]:
    """The addresses of every time ``page`` is asked its title from now on (for this test's
    page only: its own attribute is replaced)."""
    asked: list[str] = []
    title = page.title

    async def counted() -> str:
        asked.append(page.url)
        return await title()

    page.title = counted  # type: ignore[method-assign]
    return asked


async def test_the_spare_windows_blank_tab_is_not_asked_its_title_by_every_command():
    """Its blank document reported its title before any session held the window: the report
    is kept for the session, so ``get url`` reads no page there either."""
    async with spare_pool(None) as (pool, _spare):
        session = await pool.session("local")
        asked = count_title_reads(session.page)
        for _ in range(3):
            reply = await run(REGISTRY, session, parse_request({"tool": "get_url"}, REGISTRY))
            assert reply["data"]["title"] == ""
        assert asked == []


async def test_another_owner_first_gets_a_fresh_window_and_the_spare_is_closed(site_url):
    """Under the default policy the local owner's spare has no proxy; a DM controller that
    comes first gets a context of its own, blocked, and the spare is closed."""
    async with spare_pool(None) as (pool, spare):
        session = await pool.session("ab" * 32)
        assert session.context is not spare.context and session.tab is not None
        assert spare.context not in pool.browser.contexts
        assert await loaded_status(session.tab.page, f"{site_url}/index.html") == 403


async def test_events_reach_listeners(session, call, site_url):
    events = []
    session.events.listen(events.append)
    await call(f"open {site_url}/popup.html")
    await call("click #blank")
    load = {"url": f"{site_url}/popup.html", "title": "Popup", "tab": "t1"}
    assert events[0] == {"event": "load", "data": load}
    changed = [e["data"] for e in events if e["event"] == "tab_changed"]
    assert changed and changed[-1]["tab"] == "t2" and set(changed[-1]) == {"url", "title", "tab"}


async def settled_state(call, done) -> dict:
    """Poll ``get url`` (no page round trip: its title is the cached one) until ``done``."""
    async with asyncio.timeout(5):
        while not done(state := (await call("get url"))["data"]):
            await asyncio.sleep(0.05)
    return state


async def test_state_title_follows_the_page(call, site_url):
    assert (await call(f"open {site_url}/index.html"))["data"]["title"] == "Test site"
    assert (await call("eval document.title = 'Set'"))["data"]["title"] == "Set"
    assert (await call("get url"))["data"]["title"] == "Set"
    # Changed by the page's own script after the last command: the page reports it.
    await call("eval setTimeout(() => { document.title = 'Later' }, 100)")
    await settled_state(call, lambda state: state["title"] == "Later")
    edit = "document.querySelector('title').firstChild.data = 'Edited'"
    await call(f"eval setTimeout(() => {{ {edit} }}, 100)")
    await settled_state(call, lambda state: state["title"] == "Edited")
    assert (await call("tab_list"))["data"]["tabs"][0]["title"] == "Edited"
    # Navigated by the page itself, then retitled by the new document's script.
    await call("eval setTimeout(() => { location.href = 'form.html' }, 100)")
    await settled_state(call, lambda state: state["url"].endswith("/form.html"))
    await settled_state(call, lambda state: state["title"] == "Form")
    await call("eval setTimeout(() => { document.title = 'Form, later' }, 100)")
    await settled_state(call, lambda state: state["title"] == "Form, later")
    assert (await call(f"open {site_url}/popup.html"))["data"]["title"] == "Popup"
    assert (await call("get url"))["data"]["title"] == "Popup"


async def test_open_reports_the_title_its_load_handler_set(session, call, site_url):
    """The title ``open`` and its load event carry is the page's after its load handlers ran,
    and the page reports it itself: nothing asks the page for it after the load."""
    await call(f"open {site_url}/index.html")
    asked = count_title_reads(session.page)
    events = []
    session.events.listen(events.append)
    opened = await call(f"open {site_url}/load_title.html")
    assert opened["data"]["title"] == "Loaded"
    assert [e["data"]["title"] for e in events if e["event"] == "load"] == ["Loaded"]
    assert (await call("reload"))["data"]["title"] == "Loaded"
    assert (await call("get url"))["data"]["title"] == "Loaded"
    assert asked == []
    # After the load, a command that may retitle the page asks it, and reports the new title.
    assert (await call("eval document.title = 'Changed'"))["data"]["title"] == "Changed"
    assert asked
    assert (await call(f"open {site_url}/index.html"))["data"]["title"] == "Test site"


async def test_a_page_reports_its_title_once_a_load(session, call, site_url, monkeypatch):
    """From its load on, not as it is parsed: each report costs the page, Playwright's driver
    and the daemon a round trip during the load, and ``open`` answers with the load's."""
    await call(f"open {site_url}/index.html")
    tab, reports = session.tab, []
    heard = tab.title_reported

    def counted(title: str, at_load: bool = False) -> None:
        reports.append((title, at_load))
        heard(title, at_load)

    monkeypatch.setattr(tab, "title_reported", counted)
    assert (await call(f"open {site_url}/popup.html"))["data"]["title"] == "Popup"
    assert reports == [("Popup", True)]


async def test_a_blank_tab_is_not_asked_its_title_by_every_command(session, call):
    """A fresh session's blank tab loaded before its observer ran, which then reports its
    title at once: ``get url``, the commands of the load benchmarks, reads no page."""
    asked = count_title_reads(session.page)
    for _ in range(3):
        assert (await call("get url"))["data"]["title"] == ""
    assert asked == []


class HeldImage(BaseHTTPRequestHandler):
    """A page whose image comes only once ``released`` is set: its load waits until then."""

    released = threading.Event()
    PAGE = b'<title>First</title><img src="/held.png">'

    def do_GET(self) -> None:
        if self.path == "/held.png":
            self.released.wait()
        self.send_response(200)
        self.send_header("Content-Type", "image/gif" if self.path == "/held.png" else "text/html")
        self.send_header("Content-Length", "0" if self.path == "/held.png" else str(len(self.PAGE)))
        self.end_headers()
        if self.path != "/held.png":
            self.wfile.write(self.PAGE)

    def log_message(self, *args: object) -> None:
        pass


async def test_a_title_read_before_the_load_is_not_kept(session, call):
    """Before its load a page does not report its title, so what a command reads then is
    asked of the page each time: a title the page changes meanwhile is never shown stale."""
    with serving(HeldImage) as url:
        try:
            await session.page.goto(f"{url}/", wait_until="domcontentloaded")
            assert await session.page.evaluate("document.readyState") == "interactive"
            assert (await call("get url"))["data"]["title"] == "First"
            await session.page.evaluate("document.title = 'Second'")
            assert (await call("get url"))["data"]["title"] == "Second"
            assert await session.page.evaluate("document.readyState") == "interactive"
        finally:
            HeldImage.released.set()


async def test_popup_becomes_a_tracked_tab(call, site_url):
    await call(f"open {site_url}/popup.html")
    clicked = await call("click #blank")
    assert clicked["data"]["new_tabs"] == ["t2"]
    assert clicked["data"]["tab"] == "t2"
    await call("wait_for #submit")
    tabs = (await call("tab_list"))["data"]["tabs"]
    assert [(t["tab"], t["active"]) for t in tabs] == [("t1", False), ("t2", True)]
    assert tabs[1]["url"].endswith("/form.html")
    await call("tab t1")
    assert (await call("get title"))["data"]["title"] == "Popup"
    opened = await call("click #open")
    assert opened["data"]["new_tabs"] == ["t3"]


async def test_tab_ids_are_never_reused(call, site_url):
    assert (await call(f"tab new {site_url}/index.html"))["data"]["opened"] == "t2"
    closed = await call("tab close")
    assert closed["data"]["closed"] == "t2" and closed["data"]["tab"] == "t1"
    assert (await call("tab new"))["data"]["opened"] == "t3"
    assert (await call("tab t2"))["error"]["code"] == "INVALID_PARAMS"
    await call("close")
    await call("close")
    assert (await call("get url"))["error"]["code"] == "REFUSED"
    reopened = await call(f"open {site_url}/index.html")
    assert reopened["data"]["tab"] == "t4"


async def test_beforeunload_waits_for_an_answer(call, site_url):
    await call(f"open {site_url}/leave.html")
    clicked = await call("click #away")
    assert clicked["success"], clicked
    assert clicked["data"]["dialog"]["type"] == "beforeunload"
    assert (await call("get text"))["error"]["code"] == "REFUSED"
    await call("dialog accept")
    await call("wait h1")
    assert (await call("get title"))["data"]["title"] == "Test site"


async def test_download_and_console_error_events(session, call, site_url):
    events = []
    session.events.listen(events.append)
    await call(f"open {site_url}/leave.html")
    await call("click #oops")
    await call("click #file")
    # The download starts when its response arrives, after the click has returned (and each
    # request passes the network policy's route first): wait for it, bounded.
    async with asyncio.timeout(10):
        while not any(e["event"] == "download" for e in events):
            await asyncio.sleep(0.02)
    kinds = {e["event"]: e["data"] for e in events}
    assert kinds["console_error"] == {"tab": "t1", "text": "something broke"}
    assert kinds["download"] == {
        "tab": "t1",
        "url": f"{site_url}/notes.txt",
        "filename": "notes.txt",
        "kept": False,  # no command asked for it: cancelled and deleted
    }


async def test_pool_listeners_hear_every_owner(browser_pool, dispatcher, site_url):
    heard = []
    browser_pool.on_event(heard.append)
    try:
        carol = await browser_pool.session("carol-test")
        await command(dispatcher, carol, f"open {site_url}/index.html")
        await carol.close()
    finally:
        browser_pool.listeners.remove(heard.append)
    assert {
        "event": "load",
        "data": {"url": f"{site_url}/index.html", "title": "Test site", "tab": "t1"},
        "owner": "carol-test",
    } in heard


async def test_shared_isolation_gives_everyone_one_session(site_url):
    pool = BrowserPool(BrowserConfig(isolation="shared", **TEST_BROWSER))
    await pool.start()
    try:
        assert await pool.session("alice") is await pool.session("bob")
    finally:
        await pool.close()


async def test_remote_browser_over_cdp(site_url, tmp_path):
    chromium = await asyncio.create_subprocess_exec(
        BrowserConfig().find_executable(),
        "--headless",
        "--no-sandbox",  # tests may run as root
        # Without these, Chromium keeps reaching for Google's hosts on a closed network,
        # which once made this test take minutes on a loaded machine.
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--remote-debugging-port=0",
        f"--user-data-dir={tmp_path}",
        "about:blank",
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: a wrapper script dies with it
    )
    try:
        endpoint = None
        while endpoint is None:
            line = (await asyncio.wait_for(chromium.stderr.readline(), 10)).decode()
            assert line, "chromium exited before printing its DevTools endpoint"
            if "DevTools listening on " in line:
                endpoint = line.split("DevTools listening on ", 1)[1].strip()
        pool = BrowserPool(BrowserConfig(cdp_endpoint=endpoint, **TEST_BROWSER))
        await pool.start()
        dispatcher = local_dispatcher(pool, tmp_path)
        try:
            session = await pool.session("remote")
            response = await command(dispatcher, session, f"open {site_url}/form.html")
            assert response["data"]["title"] == "Form"
        finally:
            await dispatcher.close()
            await dispatcher.store.close()
            await pool.close()
    finally:
        os.killpg(chromium.pid, signal.SIGKILL)
        await chromium.wait()


async def test_crashed_tab_is_dropped(session, call, site_url):
    await call(f"open {site_url}/index.html")
    await call(f"tab new {site_url}/form.html")
    crashed = asyncio.Event()
    session.events.listen(lambda e: e["event"] == "crash" and crashed.set())
    cdp = await session.context.new_cdp_session(session.page)
    with pytest.raises(PlaywrightError):
        await asyncio.wait_for(cdp.send("Page.crash"), 5)
    await asyncio.wait_for(crashed.wait(), 10)
    tabs = (await call("tab_list"))["data"]["tabs"]
    assert [t["tab"] for t in tabs] == ["t1"]
    assert (await call("get title"))["data"]["title"] == "Test site"
