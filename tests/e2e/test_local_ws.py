"""The local WebSocket: loopback, no web pages, a token always, status, events."""

import asyncio
import json
import urllib.error
import urllib.request

import pytest
import pytest_asyncio
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from nostr_browserd.daemon.local_ws import LocalServer, load_token
from nostr_browserd.errors import BrowserdError

TOKEN = "s3cret-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def start_server(session, dispatcher, token=TOKEN):
    async def handle(owner, raw):
        assert owner == "local"
        return await dispatcher.handle_local(session.owner, raw)  # this test's own session

    async def status():
        return {"version": "test", "tabs": len(session.tabs)}

    server = LocalServer(handle, status, port=0, token=token)
    await server.start()
    session.events.listen(server.broadcast)
    return server


@pytest_asyncio.fixture(loop_scope="session")
async def server(session, dispatcher):
    server = await start_server(session, dispatcher)
    yield server
    await server.close()


async def answer(ws):
    """The next reply, skipping pushed events."""
    while (message := await ws.recv()).startswith('{"type": "event"'):
        pass
    return message


def http_get(url, headers=None, auth=True):
    request = urllib.request.Request(url, headers={**(AUTH if auth else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_status_endpoint(server):
    status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{server.port}/")
    assert status == 200
    assert body == {"version": "test", "tabs": 1, "live_view": server.live_url}


async def test_web_origin_is_refused(server):
    with pytest.raises(InvalidStatus) as caught:
        async with connect(server.url, origin="https://evil.example", additional_headers=AUTH):
            pass
    assert caught.value.response.status_code == 403
    status, _ = await asyncio.to_thread(
        http_get, f"http://127.0.0.1:{server.port}/", {"Origin": "https://evil.example"}
    )
    assert status == 403


@pytest.mark.parametrize("origin", ["null", "http://127.0.0.1"])
async def test_any_origin_is_refused(server, origin):
    status, _ = await asyncio.to_thread(
        http_get, f"http://127.0.0.1:{server.port}/", {"Origin": origin}
    )
    assert status == 403


async def test_rebound_host_name_is_refused(server):
    status, body = await asyncio.to_thread(
        http_get, f"http://127.0.0.1:{server.port}/", {"Host": f"evil.example:{server.port}"}
    )
    assert status == 403 and "127.0.0.1" in body["error"]
    status, _ = await asyncio.to_thread(
        http_get, f"http://localhost:{server.port}/", {"Host": f"localhost:{server.port}"}
    )
    assert status == 200


async def test_json_and_text_round_trip(server, site_url):
    async with connect(server.url, additional_headers=AUTH) as ws:
        await ws.send(
            json.dumps({"id": 7, "tool": "open", "params": {"url": f"{site_url}/form.html"}})
        )
        reply = json.loads(await answer(ws))
        assert reply["id"] == 7 and reply["success"] is True
        assert reply["data"]["title"] == "Form"
        await ws.send("get title")
        assert (await answer(ws)).startswith("[t1] Form http")
        await ws.send("click @e999")
        assert (await answer(ws)).startswith("✗ STALE_REF")


async def test_load_event_is_pushed(server, site_url):
    async with connect(server.url, additional_headers=AUTH) as ws:
        await ws.send(f"open {site_url}/index.html")
        events = []
        while (message := await ws.recv()).startswith('{"type": "event"'):
            events.append(json.loads(message))
        assert "Test site" in message  # the reply comes after the events it caused
        loads = [e["data"] for e in events if e["event"] == "load"]
        assert loads == [{"url": f"{site_url}/index.html", "title": "Test site", "tab": "t1"}]


async def test_a_token_is_always_required(server):
    with pytest.raises(InvalidStatus) as caught:
        async with connect(server.url):
            pass
    assert caught.value.response.status_code == 401
    async with connect(server.url, additional_headers=AUTH) as ws:
        await ws.send("get url")
        assert "about:blank" in await answer(ws)
    status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{server.port}/", auth=False)
    assert status == 401 and "version" not in body


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer s3cret-t0kén"},  # not ASCII: a 401, never a 500
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
)
async def test_wrong_tokens_are_401(server, headers):
    def get():
        # http.client sends header values as Latin-1: "é" arrives as one non-ASCII byte.
        return http_get(f"http://127.0.0.1:{server.port}/", headers, auth=False)

    status, body = await asyncio.to_thread(get)
    assert status == 401 and "Bearer" in body["error"]


async def test_the_token_is_never_taken_from_the_address(server):
    """A token in a URL ends up in logs and histories: the query string is not read."""
    with pytest.raises(InvalidStatus) as caught:
        async with connect(server.url + f"?token={TOKEN}"):
            pass
    assert caught.value.response.status_code == 401
    status, _ = await asyncio.to_thread(
        http_get, f"http://127.0.0.1:{server.port}/?token={TOKEN}", auth=False
    )
    assert status == 401


@pytest.mark.parametrize("mode", ["navigate", "no-cors", "cors"])
async def test_browser_requests_are_refused_even_with_the_token(server, mode):
    """A top-level navigation carries no Origin, but every browser request has Sec-Fetch-Mode."""
    status, body = await asyncio.to_thread(
        http_get, f"http://127.0.0.1:{server.port}/", {"Sec-Fetch-Mode": mode}
    )
    assert status == 403 and "version" not in body


def test_token_file_is_generated_0600_and_checked_like_a_key(tmp_path):
    path = tmp_path / "state" / "local-token"
    token = load_token(path, generate=True)
    assert len(token) >= 40 and path.stat().st_mode & 0o777 == 0o600
    assert load_token(path, generate=True) == token  # kept, never replaced
    path.chmod(0o644)
    with pytest.raises(BrowserdError, match="chmod 600"):
        load_token(path, generate=True)
    with pytest.raises(BrowserdError, match="does not exist"):
        load_token(tmp_path / "missing", generate=False)
    empty = tmp_path / "empty"
    empty.touch(mode=0o600)
    with pytest.raises(BrowserdError, match="empty"):
        load_token(empty, generate=False)


def test_the_server_refuses_to_start_without_a_token():
    with pytest.raises(ValueError):
        LocalServer(lambda o, r: None, dict, token="")
