"""End to end: page monitors from a phone (nostr-sdk) through a real relay and a real Chromium,
against a page server the test changes.

The tests wait on what the daemon does (a message, the store's count of checks), never on a
clock: ``[monitors] min_interval`` is one second here, so a check runs about every second.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from PIL import Image

from nostr_browserd.daemon.local_ws import OWNER
from nostr_browserd.daemon.schedule import change
from nostr_browserd.daemon.store import SqliteStore, Store
from nostr_browserd.daemon.store.watch_rows import WatchRow
from nostr_browserd.errors import ErrorCode
from tests.e2e.test_phone import open_file
from tests.fixtures.blossom import blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.site import serving

FAST = {"min_interval": 1}
NEWS = re.compile(r"^monitor m\d+: ")


class Shop:
    """A page whose body the test sets; it counts the requests for it."""

    def __init__(self) -> None:
        self.body = "<h1>Kettle</h1><p class=price>Price 10 €</p><p>Sold out</p>"
        self.hits = 0
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                with shop.lock:
                    shop.hits += 1
                    body = f"<!doctype html><title>Shop</title><main>{shop.body}</main>"
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture
def shop() -> Iterator[tuple[Shop, str]]:
    page = Shop()
    with serving(page.handler()) as url:
        yield page, f"{url}/item"


async def row(daemon: Any, owner: str, ident: str = "m1") -> WatchRow:
    return await row_of(daemon.store, owner, ident)


async def row_of(store: Store, owner: str, ident: str = "m1") -> WatchRow:
    found = await store.watch("monitor", owner, ident)
    assert found is not None
    return found


async def checks(daemon: Any, owner: str, ident: str = "m1") -> int:
    return int((await row(daemon, owner, ident)).state.get("checks", 0))


async def checked_more(daemon: Any, owner: str, more: int, ident: str = "m1") -> None:
    """Wait until ``more`` checks after now have run."""
    start = await checks(daemon, owner, ident)

    async def done() -> bool:
        return await checks(daemon, owner, ident) >= start + more

    await wait_until(done, 60)


def news(phone: SdkController, me: str, ident: str = "m1") -> list[str]:
    return [
        r.content
        for r in phone.received
        if r.sender == me and r.content.startswith(f"monitor {ident}:")
    ]


async def arrived(phone: SdkController, predicate: Any, count: int = 1) -> list[Any]:
    """The first ``count`` messages matching ``predicate``, polled ones included (a poll may
    bring several at once)."""

    def matching() -> list[Any]:
        return [r for r in phone.received if predicate(r)]

    while len(matching()) < count:
        await phone.wait_reply(predicate, 60)
    return matching()[:count]


def about(me: str, ident: str) -> Any:
    return lambda r: r.sender == me and f'"monitor": "{ident}"' in r.content


async def text_reply(phone: SdkController, me: str, command: str) -> str:
    """Send a text command; its reply (the next message that is not a monitor's news)."""
    await phone.send(me, command)
    reply = await phone.wait_reply(lambda r: r.sender == me and not NEWS.match(r.content), 30)
    return reply.content


async def test_a_change_sends_one_message_with_the_diff_and_no_change_sends_nothing(
    nostr_relay_url, start_daemon, shop, site_url
):
    page, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub], monitors=FAST)
        me = await daemon_pubkey(daemon)
        opened = await phone.command(
            me, {"tool": "open", "params": {"url": f"{site_url}/form.html"}}
        )
        assert opened["success"], opened
        snap = await phone.command(me, {"tool": "snapshot", "params": {"interactive": True}})
        assert "@e1" in snap["data"]["snapshot"] or "e1" in snap["data"]["snapshot"]

        added = await text_reply(phone, me, f"monitor add {url} .price --every 1s")
        assert added.startswith(f"monitor m1 watches {url} (.price) every 1s"), added
        await wait_until(lambda: page.hits >= 1, 30)
        await checked_more(daemon, phone.pubkey, 3)  # the baseline, then nothing new
        assert news(phone, me) == []

        with page.lock:
            page.body = page.body.replace("Price 10 €", "Price 12 €")
        changed = await phone.wait_reply(
            lambda r: r.sender == me and r.content.startswith("monitor m1:"), 60
        )
        assert changed.scheme == "nip17"
        assert changed.content == f"monitor m1: {url} changed\n-Price 10 €\n+Price 12 €"
        await checked_more(daemon, phone.pubkey, 3)
        await phone.poll()
        assert news(phone, me) == [changed.content], "one message per change"

        # The checks ran in a tab of their own: the controller's tabs, active tab and refs
        # are as they were.
        tabs = await phone.command(me, {"tool": "tab_list"})
        assert [(t["tab"], t["active"]) for t in tabs["data"]["tabs"]] == [("t1", True)]
        assert tabs["data"]["tabs"][0]["url"] == f"{site_url}/form.html"
        again = await phone.command(me, {"tool": "get_text", "params": {"ref": "e1"}})
        assert again["success"], again

        listed = await phone.command(me, {"tool": "monitor_list"})
        (only,) = listed["data"]["monitors"]
        assert only["id"] == "m1" and only["outcome"] == "no change" and only["changed"]
        status = await daemon.status()
        assert status["monitors"]["monitors"] == 1 and status["monitors"]["failing"] == 0


async def test_a_check_works_on_the_page_text_once(
    nostr_relay_url, start_daemon, shop, monkeypatch
):
    """A check normalises what it read once, and its reply shows that: a long page's text
    holds the event loop, and every controller's command with it, while it is worked on."""
    _, url = shop
    worked: list[str] = []
    normalise = change.normalise

    def counted(text: str) -> str:
        worked.append(text)
        return normalise(text)

    monkeypatch.setattr(change, "normalise", counted)
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub], monitors=FAST)
        me = await daemon_pubkey(daemon)
        params = {"url": url, "every": "1h"}
        made = await phone.command(me, {"tool": "monitor_add", "params": params})
        assert made["success"], made
        await wait_until(lambda: checks(daemon, phone.pubkey), 30)  # the baseline
        checked = await phone.command(me, {"tool": "monitor_check", "params": {"id": "m1"}})
        assert checked["data"]["seen"] == "Kettle\nPrice 10 €\nSold out", checked
        assert await checks(daemon, phone.pubkey) == 2
        assert len(worked) == 2, "one normalisation a check"


async def test_a_stop_that_comes_with_a_wake_stops_the_monitors(nostr_relay_url, start_daemon):
    """The scheduler stops even when it is woken (a check done, a monitor added) in the same
    moment: ``asyncio.wait_for`` lost that cancel on Python 3.11, and the daemon's stop then
    waited for ever while the checks went on."""
    daemon = await start_daemon([nostr_relay_url], monitors=FAST)
    watches = daemon.watches
    assert watches is not None
    for ticks in range(4):  # the wake a few steps of the loop before the stop, or none
        watches._wake.set()
        for _ in range(ticks):
            await asyncio.sleep(0)
        closing = asyncio.ensure_future(watches.close())
        done, _ = await asyncio.wait([closing], timeout=30)  # only so a hang fails
        assert closing in done, f"the stop {ticks} steps after a wake never ended"
        await watches.start()


async def test_contains_and_missing_write_when_their_text_comes_and_goes(
    nostr_relay_url, start_daemon, shop
):
    page, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub], monitors=FAST)
        me = await daemon_pubkey(daemon)
        for params in ({"missing": "Sold out"}, {"contains": "Last one"}):
            made = await phone.command(
                me, {"tool": "monitor_add", "params": {"url": url, "every": "1s", **params}}
            )
            assert made["success"], made
        await checked_more(daemon, phone.pubkey, 2, "m2")
        with page.lock:
            page.body = page.body.replace("Sold out", "Last one in stock")
        (gone,) = await arrived(phone, about(me, "m1"))
        (came,) = await arrived(phone, about(me, "m2"))
        assert gone.json["message"] == f"monitor m1: {url} no longer contains 'Sold out'"
        assert came.json["message"] == f"monitor m2: {url} now contains 'Last one'"
        assert "+Last one in stock" in came.json["diff"]
        # It stays there: nothing more, until it goes and comes back.
        await checked_more(daemon, phone.pubkey, 2, "m1")
        await checked_more(daemon, phone.pubkey, 2, "m2")
        with page.lock:
            page.body = page.body.replace("Last one in stock", "Sold out")
        await checked_more(daemon, phone.pubkey, 2, "m1")
        await checked_more(daemon, phone.pubkey, 2, "m2")
        await phone.poll()
        assert len([r for r in phone.received if about(me, "m2")(r)]) == 1
        assert len([r for r in phone.received if about(me, "m1")(r)]) == 1
        with page.lock:
            page.body = page.body.replace("Sold out", "Last one in stock")
        await arrived(phone, about(me, "m1"), 2)
        await arrived(phone, about(me, "m2"), 2)


async def test_a_restart_keeps_monitors_and_a_missed_check_runs_once(
    nostr_relay_url, start_daemon, shop, tmp_path
):
    page, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        state = tmp_path / "kept"
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], monitors=FAST, state_dir=state
        )
        me = await daemon_pubkey(daemon)
        made = await phone.command(
            me, {"tool": "monitor_add", "params": {"url": url, "every": "1h"}}
        )
        assert made["success"], made
        await wait_until(lambda: checks(daemon, phone.pubkey), 30)  # the baseline
        await daemon.stop()
        with page.lock:
            page.body = page.body.replace("Price 10 €", "Price 9 €")
        # Down for ten intervals: the row says it was due ten hours ago.
        store = SqliteStore(state / "state.sqlite3")
        down = await row_of(store, phone.pubkey)
        down.due -= 11 * 3600
        assert await store.watch_save(down)
        await store.close()
        again = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], monitors=FAST, state_dir=state
        )
        missed = await row(again, phone.pubkey)
        assert missed.state["checks"] == 1
        (changed,) = await arrived(phone, about(me, "m1"))
        assert changed.json["event"] == "change" and "+Price 9 €" in changed.json["diff"]
        after = await row(again, phone.pubkey)
        assert after.state["checks"] == 2, "once, not once per missed interval"
        assert abs(after.due - after.state["checked"] - 3600) <= 30  # on its beat


async def test_refusals(nostr_relay_url, start_daemon, shop):
    _, url = shop
    async with (
        SdkController([nostr_relay_url]) as stranger,
        SdkController([nostr_relay_url]) as phone,
        SdkController([nostr_relay_url]) as reader,
        SdkController([nostr_relay_url]) as other,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub, other.npub, {"pubkey": reader.npub, "role": "read"}],
            monitors={"min_interval": 60, "max_per_controller": 1},
        )
        me = await daemon_pubkey(daemon)
        await stranger.send(me, f"monitor add {url} --every 1m")

        async def add(who: SdkController, **params: Any) -> dict[str, Any]:
            request = {"tool": "monitor_add", "params": {"url": url, **params}}
            return await who.command(me, request)

        read = await add(reader)
        assert (
            read["error"]["code"] == ErrorCode.FORBIDDEN
            and "role 'read'" in read["error"]["message"]
        )
        short = await add(phone, every="30s")
        assert short["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "[monitors] min_interval (1m)" in short["error"]["message"]
        assert (await add(phone, every="1m"))["success"]
        over = await add(phone, every="1m")
        assert over["error"]["code"] == ErrorCode.REFUSED
        assert "max_per_controller" in over["error"]["message"]
        scheduled = await phone.command(
            me, {"tool": "schedule_add", "params": {"when": "every 1h", "command": "snapshot"}}
        )
        assert scheduled["error"]["code"] == ErrorCode.REFUSED, (
            "monitors and schedules count together"
        )

        # A second controller sees none of them, and cannot remove them.
        assert (await other.command(me, {"tool": "monitor_list"}))["data"]["monitors"] == []
        theirs = await other.command(me, {"tool": "monitor_remove", "params": {"id": "m1"}})
        assert theirs["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "You have no monitor m1" in theirs["error"]["message"]
        assert await daemon.store.watch("monitor", phone.pubkey, "m1") is not None

        # The local channel has no chat to write to.
        local = json.loads(
            await daemon.dispatcher.handle_local(
                OWNER, json.dumps({"tool": "monitor_add", "params": {"url": url}})
            )
        )
        assert local["error"]["code"] == ErrorCode.FORBIDDEN
        assert "no chat to write to" in local["error"]["message"]
        assert await daemon.store.watch_count(OWNER) == 0
        # A stranger, who wrote before all of these, is never answered and made nothing.
        assert await stranger.poll() == [] and stranger.received == []
        assert await daemon.store.watch_count(stranger.pubkey) == 0


async def test_a_private_address_is_refused_under_the_network_policy(
    nostr_relay_url, start_daemon, shop
):
    _, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            browser={"block_private_networks": True},
        )
        me = await daemon_pubkey(daemon)
        refused = await phone.command(me, {"tool": "monitor_add", "params": {"url": url}})
        assert refused["error"]["code"] == ErrorCode.FORBIDDEN, refused
        assert await daemon.store.watch_count(phone.pubkey) == 0


async def test_a_change_with_screenshot_sends_a_picture_of_the_element(
    nostr_relay_url, start_daemon, shop, blossom_server
):
    page, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            monitors=FAST,
            files={"blossom_servers": [blossom_server.url]},
        )
        me = await daemon_pubkey(daemon)
        added = await text_reply(phone, me, f"monitor add {url} .price --every 1s --screenshot")
        assert "with a picture" in added
        await checked_more(daemon, phone.pubkey, 2)
        with page.lock:
            page.body = page.body.replace("Price 10 €", "Price 11 €")
        (picture,) = await arrived(phone, lambda r: r.sender == me and r.kind == 15)
        (told,) = await arrived(phone, lambda r: r.sender == me and NEWS.match(r.content))
        assert told.content.startswith(f"monitor m1: {url} changed")
        image = Image.open(io.BytesIO(open_file(picture)))
        assert image.format == "PNG"
        width, height = image.size
        assert 0 < height < 100 and 0 < width <= 1280, "the element, not the page"


async def test_one_approval_names_the_monitor_and_then_checks_run_unasked(
    nostr_relay_url, start_daemon, shop
):
    page, url = shop
    async with (
        SdkController([nostr_relay_url]) as phone,
        SdkController([nostr_relay_url]) as approver,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[{"pubkey": phone.npub, "approver": approver.npub}],
            monitors=FAST,
        )
        me = await daemon_pubkey(daemon)
        await phone.send(me, f"monitor add {url} .price --every 1s")
        asked = await approver.wait_reply(lambda r: r.sender == me and "approve" in r.content, 30)
        assert f"monitor {url} (the element '.price') every 1s" in asked.content
        assert page.hits == 0 and await daemon.store.watch_count(phone.pubkey) == 0
        code = re.search(r'"approve ([A-Z0-9]+)"', asked.content)
        assert code is not None
        await approver.send(me, f"approve {code[1]}")
        await arrived(phone, lambda r: r.sender == me and "monitor m1 watches" in r.content)
        await checked_more(daemon, phone.pubkey, 3)
        await approver.poll()
        assert [r for r in approver.received if "approve" in r.content] == [asked]


async def test_failures_are_said_once_after_the_notice_and_the_recovery_once(
    nostr_relay_url, start_daemon, shop
):
    page, url = shop
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            monitors={**FAST, "failures_before_notice": 2},
        )
        me = await daemon_pubkey(daemon)
        added = await text_reply(phone, me, f"monitor add {url} .price --every 1s")
        assert added.startswith("monitor m1 watches")
        await checked_more(daemon, phone.pubkey, 1)
        with page.lock:
            page.body = page.body.replace("class=price", "class=gone")
        (failing,) = await arrived(phone, lambda r: r.sender == me and "is failing" in r.content)
        assert failing.content == (
            f"monitor m1: {url} is failing: '.price' matches nothing on the page"
            " (2 checks in a row)"
        )
        await checked_more(daemon, phone.pubkey, 2)
        with page.lock:
            page.body = page.body.replace("class=gone", "class=price")
        (back,) = await arrived(phone, lambda r: r.sender == me and "works again" in r.content)
        assert back.content == f"monitor m1: {url} works again"
        await checked_more(daemon, phone.pubkey, 2)
        await phone.poll()
        assert len(news(phone, me)) == 2, "each said once; the same price is no change"
