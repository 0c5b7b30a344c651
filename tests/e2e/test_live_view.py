"""The live view: a screencast to the /live page in a real headless Chromium, flow control,
and the live data kept behind the token."""

import asyncio
import base64
import io
import json
import urllib.request
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from PIL import Image
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from nostr_browserd.browser.screencast import Fanout, Screencast, StreamSettings
from nostr_browserd.daemon.local_ws import OWNER
from tests.fixtures.daemon import start_daemon_fixture, wait_until  # noqa: F401


@pytest_asyncio.fixture
async def daemon(start_daemon, nostr_relay_url):
    """A daemon whose local channel serves /live; the stream is its local session's."""
    return await start_daemon([nostr_relay_url])


@pytest.fixture
def call(daemon):
    """One command on the daemon's local channel, as its clients send it; the response."""

    async def send(raw):
        return (await daemon.dispatcher.handle(OWNER, raw, transport="local", local=True)).response

    return send


@pytest.fixture
def watch(daemon):
    """The watch-only token, from the address the daemon gives for /live."""
    return urlsplit(daemon.local.live_url).fragment


@pytest_asyncio.fixture(loop_scope="session")
async def viewer(browser_pool):
    """A session of the tests' own headless Chromium: a person's browser on /live."""
    watcher = await browser_pool.session("live-viewer")
    yield watcher.page
    await watcher.close()


async def test_live_page_shows_the_stream(daemon, viewer, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    enabled = await call({"tool": "stream_enable", "params": {"max_width": 640}})
    assert enabled["success"] and enabled["data"]["on"], enabled
    await viewer.goto(daemon.local.live_url)
    assert "#" not in viewer.url  # the page took the token out of its address
    await viewer.wait_for_function("() => document.getElementById('screen').dataset.seq")
    await viewer.wait_for_function(
        "url => document.getElementById('url').textContent === url", arg=f"{site_url}/index.html"
    )
    # The daemon's own recent commands, from its audit store: who sent which tool.
    await viewer.wait_for_function(
        "() => document.getElementById('commands').textContent.includes('stream_enable')"
    )
    assert "local (local): open ok" in await viewer.text_content("#commands")
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


async def test_stream_follows_tab_switches(daemon, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    assert (await call("stream_enable"))["success"]
    session = daemon.browser.existing(OWNER)
    assert session.stream.screencast.tab == session.active_tab
    assert (await call(f"tab_new {site_url}/form.html"))["success"]
    assert session.active_tab == "t2"
    tabs = set()
    local = daemon.local
    async with connect(local.url, additional_headers=local.headers) as ws, asyncio.timeout(10):
        while "t2" not in tabs:  # the new tab's frames come (a broken follow times out)
            message = json.loads(await ws.recv())
            if message.get("event") == "stream_frame":
                tabs.add(message["data"]["tab"])
    assert session.stream.screencast.tab == "t2"
    assert (await call("stream_disable"))["success"]
    assert session.stream.screencast is None
    assert (await call("stream_status"))["data"]["on"] is False


def get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


async def test_live_page_shell_holds_no_data(daemon, watch):
    port = daemon.local.port
    status, headers, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/live")
    assert status == 200 and body.startswith(b"<!doctype html>")
    assert daemon.local.token.encode() not in body and watch.encode() not in body
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"  # older browsers ignore frame-ancestors
    assert headers["Cache-Control"] == "no-store"  # nothing of it kept on disk
    # The status page still wants the header token, from a browser never.
    status, _, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/")
    assert status == 401
    status, _, body = await asyncio.to_thread(
        get, f"http://127.0.0.1:{port}/", daemon.local.headers
    )
    assert status == 200 and json.loads(body)["live_view"] == daemon.local.live_url


async def test_the_watch_token_watches_and_does_nothing_else(daemon, watch):
    """The page's address holds the watch token: the full-control token stays out of
    browser history; the watch token opens /live, and neither the channel nor its status."""
    local = daemon.local
    assert watch and watch != local.token and local.token not in local.live_url
    url, origin = f"ws://127.0.0.1:{local.port}/live", f"http://127.0.0.1:{local.port}"
    async with connect(url, origin=origin) as ws:
        await ws.send(json.dumps({"token": local.token}))  # the full token is not the page's
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
        assert closed.value.rcvd.code == 4401
    bearer = {"Authorization": f"Bearer {watch}"}
    with pytest.raises(InvalidStatus) as refused:
        async with connect(local.url, additional_headers=bearer):
            pass
    assert refused.value.response.status_code == 401
    status, _, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{local.port}/", bearer)
    assert status == 401


async def test_live_data_is_refused_without_the_token(daemon, watch, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    assert (await call("stream_enable"))["success"]
    port = daemon.local.port
    origin, url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/live"
    for first in [json.dumps({"token": "wrong"}), "not json", json.dumps({"token": 1})]:
        async with connect(url, origin=origin) as ws:
            await ws.send(first)
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()  # nothing at all comes before the close
            assert closed.value.rcvd.code == 4401
    # Another page's origin (or none: a script) is not let in to try.
    for other in ["http://evil.example", f"http://127.0.0.1:{port + 1}"]:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(url, origin=other):
                pass
        assert caught.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        async with connect(url):
            pass
    # With the watch token, data comes.
    async with connect(url, origin=origin) as ws:
        await ws.send(json.dumps({"token": watch}))
        kinds = set()
        while not {"live", "event"} <= kinds:
            kinds.add(json.loads(await ws.recv())["type"])


async def test_live_socket_runs_no_commands(daemon, watch, call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    port = daemon.local.port
    origin = f"http://127.0.0.1:{port}"
    async with connect(f"ws://127.0.0.1:{port}/live", origin=origin) as ws:
        await ws.send(json.dumps({"token": watch}))
        await ws.send(json.dumps({"tool": "open", "params": {"url": f"{site_url}/form.html"}}))
        replies = [json.loads(await ws.recv()) for _ in range(2)]
    assert all(r["type"] in ("live", "event") for r in replies)
    assert daemon.browser.existing(OWNER).page.url == f"{site_url}/index.html"


# --- flow control (pure) ---------------------------------------------------------------


class SlowViewer:
    """A viewer whose sends finish only when the test says so."""

    def __init__(self):
        self.gate = asyncio.Event()
        self.begun = []
        self.got = []

    async def send(self, text):
        self.begun.append(text)
        await self.gate.wait()
        self.got.append(text)


async def test_a_slow_viewer_drops_frames_and_holds_back_the_acks():
    fanout = Fanout()
    slow, acks = SlowViewer(), []

    async def ack():
        acks.append(1)

    fanout.add("slow", slow.send)
    for n in range(10):
        fanout.offer(f"frame {n}", ack)
    await wait_until(lambda: slow.begun)  # the acks' waits began before it: they wait
    assert acks == []  # Chrome is held back while the one frame in flight is not sent
    assert fanout.status() | {"fps": 0} == {
        "viewers": 1,
        "frames_sent": 0,
        "frames_dropped": 9,
        "fps": 0,
    }
    slow.gate.set()
    await wait_until(lambda: len(acks) == 10)
    assert slow.got == ["frame 0"]  # nothing was queued behind it
    assert len(acks) == 10 and fanout.sent == 1
    fanout.offer("frame 10", ack)  # free again: the next frame is taken
    await wait_until(lambda: len(slow.got) == 2)
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
        await wait_until(lambda n=n: len(acks) == n + 1)  # the fast one took it: free again
    assert len(fast.got) == 5 and len(acks) == 5
    assert fanout.viewers["slow"].dropped == 4 and slow.got == []
    fanout.remove("slow")
    slow.gate.set()
    await wait_until(lambda: slow.got)
    assert slow.got == ["frame 0"]


async def test_with_no_viewer_frames_are_acknowledged_at_once():
    fanout, acks = Fanout(), []

    async def ack():
        acks.append(1)

    fanout.offer("frame", ack)
    await wait_until(lambda: acks)
    assert acks == [1] and fanout.sent == 0 and fanout.dropped == 0


class FakeCdp:
    """The page's CDP session as far as acknowledging frames goes."""

    def __init__(self):
        self.acked = []

    async def send(self, method, params):
        self.acked.append((method, params["sessionId"]))


async def test_frames_are_acknowledged_no_faster_than_max_fps():
    """Chrome sends the next frame only after an ack: an ack waits out 1/max_fps since the
    last one (the clock is the test's, so nothing here is timed)."""
    now, waits = [100.0], []

    async def sleep(seconds):
        waits.append(round(seconds, 6))
        now[0] += seconds

    cast, cdp = Screencast(Fanout(), StreamSettings(max_fps=4)), FakeCdp()
    cast.clock, cast.sleep, cast._cdp = lambda: now[0], sleep, cdp
    await cast._ack(cdp, 1)  # the first frame: nothing to wait for
    await cast._ack(cdp, 2)  # at once after it: a quarter of a second later
    now[0] += 0.1
    await cast._ack(cdp, 3)  # 0.1 s after: the rest of the quarter
    now[0] += 1.0
    await cast._ack(cdp, 4)  # long after: at once
    assert waits == [0.25, 0.15]
    assert cdp.acked == [("Page.screencastFrameAck", n) for n in (1, 2, 3, 4)]


async def test_acks_asked_for_at_once_take_their_turns():
    """Chrome's frames come one after another while the acks wait: each ack waits its own
    turn, so the stream keeps to max_fps (three frames at once were three times as fast)."""
    now, waits = [100.0], []

    async def sleep(seconds):  # the clock stands still: the acks all wait at once
        waits.append(round(seconds, 6))
        await asyncio.sleep(0)

    cast, cdp = Screencast(Fanout(), StreamSettings(max_fps=4)), FakeCdp()
    cast.clock, cast.sleep, cast._cdp = lambda: now[0], sleep, cdp
    await asyncio.gather(*(cast._ack(cdp, n) for n in (1, 2, 3)))
    assert waits == [0.25, 0.5]
    assert len(cdp.acked) == 3
