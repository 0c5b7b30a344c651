"""End to end: a command stopped at its deadline does nothing afterwards (daemon/running.py).

A real daemon and Chromium, and a shop on a loopback server that counts its orders.  Its
Buy button becomes clickable only after the command deadline has passed: by the page itself
(it waits for the server, which the test opens after the TIMEOUT), or by the controller's
next command.  A click still alive in the browser would land within Playwright's retry
interval (at most 500 ms) of the button turning clickable; the test waits for that moment
(the page reports it) and then, a bounded wait for an order that must never come.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from nostr_browserd.errors import ErrorCode
from tests.fixtures.daemon import SdkController, daemon_pubkey, start_daemon_fixture  # noqa: F401
from tests.fixtures.site import serving

# How long an order that is on its way gets to arrive: many times Playwright's longest
# retry interval, so a click that outlived its command lands well within it.
LINGER = 5.0

SHOP = b"""<title>Shop</title><button id=buy disabled>Buy</button><script>
const buy = document.getElementById('buy')
buy.onclick = () => fetch('/order', {method: 'POST'})
new MutationObserver(() => fetch('/enabled')).observe(buy, {attributes: true})
fetch('/ready').then(() => { buy.disabled = false })
</script>"""


class Shop(BaseHTTPRequestHandler):
    """/shop; /ready answers once ``opened`` is set; /enabled when Buy turned clickable;
    POST /order counts an order."""

    opened: threading.Event
    enabled: threading.Event
    ordered: threading.Event
    orders: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/ready":
            self.opened.wait()
        elif self.path == "/enabled":
            self.enabled.set()
        self.answer(SHOP if self.path == "/shop" else b"ok")

    def do_POST(self) -> None:
        self.orders.append(self.path)
        self.ordered.set()
        self.answer(b"ordered")

    def answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def shop() -> Iterator[tuple[type[Shop], str]]:
    """A Shop of its own on a free port: ``(handler, base URL)``."""
    events = {name: threading.Event() for name in ("opened", "enabled", "ordered")}
    handler = type("OneShop", (Shop,), {**events, "orders": []})
    with serving(handler) as url:
        try:
            yield handler, url
        finally:
            handler.opened.set()  # frees the page's held request, so the server can stop


@pytest.mark.parametrize("clickable_by", ["the page", "the next command"])
async def test_a_command_stopped_at_its_deadline_does_nothing_afterwards(
    nostr_relay_url, start_daemon, shop, clickable_by
):
    handler, base = shop
    async with SdkController([nostr_relay_url]) as phone:
        # The browser's own wait for a clickable button outlasts the command's deadline.
        browser = {"command_timeout": 3, "timeout_ms": 120_000}
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub], browser=browser)
        me = await daemon_pubkey(daemon)
        opened = await phone.command(me, {"tool": "open", "params": {"url": f"{base}/shop"}})
        assert opened["success"], opened
        click = {"id": "click", "tool": "click", "params": {"selector": "#buy"}}
        enable = "document.getElementById('buy').disabled = false"
        sent = [click]
        if clickable_by == "the next command":  # queued behind the click, in its lane
            sent.append({"id": "enable", "tool": "eval", "params": {"script": enable}})
        for request in sent:
            await phone.send(me, json.dumps(request))
        replies = await answers(phone, me, [request["id"] for request in sent])
        stopped = replies["click"]
        assert stopped["error"]["code"] == ErrorCode.TIMEOUT, stopped
        assert "was stopped" in stopped["error"]["message"]
        if clickable_by == "the page":
            handler.opened.set()
        else:
            assert replies["enable"]["success"], replies
        # The page's would-be moment: Buy is clickable now.
        assert await asyncio.to_thread(handler.enabled.wait, 30)
        assert not await asyncio.to_thread(handler.ordered.wait, LINGER), handler.orders
        # The person who trusts "stopped" and clicks again buys once.
        again = await phone.command(me, {"tool": "click", "params": {"selector": "#buy"}})
        assert again["success"], again
        assert await asyncio.to_thread(handler.ordered.wait, 30)
        assert handler.orders == ["/order"]


async def answers(phone: SdkController, daemon: str, ids: list[str]) -> dict[str, Any]:
    """The daemon's JSON replies to the requests ``ids``, by id, once all have come."""
    found: dict[str, Any] = {}
    async with asyncio.timeout(60):
        while set(ids) - set(found):
            for reply in await phone.poll():
                answer = json.loads(reply.content) if reply.sender == daemon else {}
                if answer.get("id") in ids:
                    found[answer["id"]] = answer
            await asyncio.sleep(0.05)
    return found
