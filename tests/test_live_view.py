"""The live view: a screencast to the /live page in a real headless Chromium, flow control,
and the live data kept behind the token."""

import asyncio
import base64
import io
import json
import urllib.request

import pytest
import pytest_asyncio
from PIL import Image
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from nostr_browserd.browser.screencast import Fanout
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.daemon.local_ws import LocalServer
from nostr_browserd.tools.stream import live_state

TOKEN = "l1ve-t0ken"


@pytest_asyncio.fixture(loop_scope="session")
async def live(session, browser_pool, dispatcher):
    """A local server whose viewers get ``session``'s stream; stream off afterwards."""

    async def handle(owner, raw):
        return await dispatcher.handle_local(session.owner, raw)  # this test's own session

    recent = [{"at": "now", "controller": "local", "transport": "local", "tool": "open"}]
    recent[0]["outcome"] = "ok"

    async def state():
        return await live_state(session, browser_pool.frames, recent)

    async def status():
        return {}

    server = LocalServer(
        handle, status, port=0, token=TOKEN, frames=browser_pool.frames, live=state
    )
    await server.start()
    session.on_event(server.broadcast)
    yield server
    await REGISTRY.call(session, "stream_disable", {})
    await server.close()


@pytest_asyncio.fixture(loop_scope="session")
async def viewer(browser_pool):
    """A second session of the same headless Chromium: a person's browser on /live."""
    watcher = await browser_pool.session("live-viewer")
    yield watcher.page
    await watcher.close()


async def test_live_page_shows_the_stream(live, viewer, session, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    enabled = await call({"tool": "stream_enable", "params": {"max_width": 640}})
    assert enabled["success"] and enabled["data"]["on"], enabled
    await viewer.goto(f"http://127.0.0.1:{live.port}/live#{TOKEN}")
    assert "#" not in viewer.url  # the page took the token out of its address
    await viewer.wait_for_function("() => document.getElementById('screen').dataset.seq")
    await viewer.wait_for_function(
        "url => document.getElementById('url').textContent === url", arg=f"{site_url}/index.html"
    )
    assert "open" in await viewer.text_content("#commands")
    first = await viewer.get_attribute("#screen", "src")
    assert first.startswith("data:image/jpeg;base64,")
    picture = base64.b64decode(first.split(",", 1)[1])
    assert picture[:3] == b"\xff\xd8\xff"  # JPEG's start of image
    image = Image.open(io.BytesIO(picture))
    assert image.format == "JPEG" and 0 < image.width <= 640 and image.height > 0
    assert await viewer.evaluate("document.getElementById('screen').naturalWidth") == image.width

    assert (await call(f"open {site_url}/form.html"))["success"]
    await viewer.wait_for_function(
        "first => document.getElementById('screen').src !== first", arg=first
    )
    await viewer.wait_for_function(
        "url => document.getElementById('url').textContent === url", arg=f"{site_url}/form.html"
    )
    status = await call("stream_status")
    assert status["data"]["frames_sent"] >= 2 and status["data"]["viewers"] >= 1, status


async def test_stream_follows_tab_switches(live, session, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    assert (await call("stream_enable"))["success"]
    assert session.screencast.tab == session.active_tab
    assert (await call(f"tab_new {site_url}/form.html"))["success"]
    assert session.active_tab == "t2"
    tabs = set()
    async with connect(live.url, additional_headers=live.headers) as ws, asyncio.timeout(10):
        while "t2" not in tabs:  # the new tab's frames come (a broken follow times out)
            message = json.loads(await ws.recv())
            if message.get("event") == "stream_frame":
                tabs.add(message["data"]["tab"])
    assert session.screencast.tab == "t2"
    assert (await call("stream_disable"))["success"]
    assert session.screencast is None
    assert (await call("stream_status"))["data"]["on"] is False


def get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


async def test_live_page_shell_holds_no_data(live):
    status, headers, body = await asyncio.to_thread(get, f"http://127.0.0.1:{live.port}/live")
    assert status == 200 and body.startswith(b"<!doctype html>")
    assert TOKEN.encode() not in body
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    # The status page still wants the header token, from a browser never.
    status, _, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{live.port}/")
    assert status == 401


async def test_live_data_is_refused_without_the_token(live, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    assert (await call("stream_enable"))["success"]
    origin = f"http://127.0.0.1:{live.port}"
    url = f"ws://127.0.0.1:{live.port}/live"
    for first in [json.dumps({"token": "wrong"}), "not json", json.dumps({"token": 1})]:
        async with connect(url, origin=origin) as ws:
            await ws.send(first)
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()  # nothing at all comes before the close
            assert closed.value.rcvd.code == 4401
    # Another page's origin (or none: a script) is not let in to try.
    for other in ["http://evil.example", f"http://127.0.0.1:{live.port + 1}"]:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(url, origin=other):
                pass
        assert caught.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        async with connect(url):
            pass
    # With the token, data comes.
    async with connect(url, origin=origin) as ws:
        await ws.send(json.dumps({"token": TOKEN}))
        kinds = set()
        while not {"live", "event"} <= kinds:
            kinds.add(json.loads(await ws.recv())["type"])


async def test_live_socket_runs_no_commands(live, session, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    origin = f"http://127.0.0.1:{live.port}"
    async with connect(f"ws://127.0.0.1:{live.port}/live", origin=origin) as ws:
        await ws.send(json.dumps({"token": TOKEN}))
        await ws.send(json.dumps({"tool": "open", "params": {"url": f"{site_url}/form.html"}}))
        replies = [json.loads(await ws.recv()) for _ in range(2)]
    assert all(r["type"] in ("live", "event") for r in replies)
    assert session.page.url == f"{site_url}/index.html"


# --- flow control (pure) ---------------------------------------------------------------


class SlowViewer:
    """A viewer whose sends finish only when the test says so."""

    def __init__(self):
        self.gate = asyncio.Event()
        self.got = []

    async def send(self, text):
        await self.gate.wait()
        self.got.append(text)


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_slow_viewer_drops_frames_and_holds_back_the_acks():
    fanout = Fanout()
    slow, acks = SlowViewer(), []

    async def ack():
        acks.append(1)

    fanout.add("slow", slow.send)
    for n in range(10):
        fanout.offer(f"frame {n}", ack)
    await settle()
    assert acks == []  # Chrome is held back while the one frame in flight is not sent
    assert fanout.status() | {"fps": 0} == {
        "viewers": 1,
        "frames_sent": 0,
        "frames_dropped": 9,
        "fps": 0,
    }
    slow.gate.set()
    await settle()
    assert slow.got == ["frame 0"]  # nothing was queued behind it
    assert len(acks) == 10 and fanout.sent == 1
    fanout.offer("frame 10", ack)  # free again: the next frame is taken
    await settle()
    assert slow.got == ["frame 0", "frame 10"] and fanout.dropped == 9


async def test_a_fast_viewer_is_not_held_back_by_a_slow_one():
    fanout = Fanout()
    slow, fast, acks = SlowViewer(), SlowViewer(), []
    fast.gate.set()

    async def ack():
        acks.append(1)

    fanout.add("slow", slow.send)
    fanout.add("fast", fast.send)
    for n in range(5):
        fanout.offer(f"frame {n}", ack)
        await settle()
    assert len(fast.got) == 5 and len(acks) == 5
    assert fanout.viewers["slow"].dropped == 4 and slow.got == []
    fanout.remove("slow")
    slow.gate.set()
    await settle()
    assert slow.got == ["frame 0"]


async def test_with_no_viewer_frames_are_acknowledged_at_once():
    fanout, acks = Fanout(), []

    async def ack():
        acks.append(1)

    fanout.offer("frame", ack)
    await settle()
    assert acks == [1] and fanout.sent == 0 and fanout.dropped == 0
