"""The local WebSocket: loopback, no web origins, optional token, status, events."""

import asyncio
import json
import urllib.error
import urllib.request

import pytest
import pytest_asyncio
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from nostr_browserd.commands.catalog import REGISTRY
from nostr_browserd.commands.protocol import handle_message
from nostr_browserd.daemon.local_ws import LocalServer


async def start_server(session, token=None):
    async def handle(owner, raw):
        assert owner == "local"
        return await handle_message(REGISTRY, session, raw)

    server = LocalServer(
        handle, lambda: {"version": "test", "tabs": len(session.tabs)}, port=0, token=token
    )
    await server.start()
    session.on_event(server.broadcast)
    return server


@pytest_asyncio.fixture(loop_scope="session")
async def server(session):
    server = await start_server(session)
    yield server
    await server.close()


async def answer(ws):
    """The next reply, skipping pushed events."""
    while (message := await ws.recv()).startswith('{"type": "event"'):
        pass
    return message


def http_get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_status_endpoint(server):
    status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{server.port}/")
    assert status == 200
    assert body == {"version": "test", "tabs": 1}


async def test_web_origin_is_refused(server):
    with pytest.raises(InvalidStatus) as caught:
        async with connect(server.url, origin="https://evil.example"):
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
    async with connect(server.url) as ws:
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
    async with connect(server.url) as ws:
        await ws.send(f"open {site_url}/index.html")
        events = []
        while (message := await ws.recv()).startswith('{"type": "event"'):
            events.append(json.loads(message))
        assert "Test site" in message  # the reply comes after the events it caused
        loads = [e["data"] for e in events if e["event"] == "load"]
        assert loads == [{"url": f"{site_url}/index.html", "title": "Test site", "tab": "t1"}]


async def test_token_required_when_configured(session):
    server = await start_server(session, token="s3cret")
    try:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(server.url):
                pass
        assert caught.value.response.status_code == 401
        async with connect(server.url, additional_headers={"Authorization": "Bearer s3cret"}) as ws:
            await ws.send("get url")
            assert "about:blank" in await answer(ws)
        async with connect(server.url + "?token=s3cret") as ws:
            await ws.send("help")
            assert "snapshot" in await answer(ws)
    finally:
        await server.close()
