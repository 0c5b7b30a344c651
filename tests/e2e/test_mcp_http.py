"""``nostr-browserd mcp --local --http 127.0.0.1:PORT``: the bearer token is required."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from nostr_browserd import __version__
from tests.e2e.test_mcp_local import local_config
from tests.fixtures.mcp_client import CLI
from tests.fixtures.relays import free_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def mcp_http(tmp_path: Path, host: str = "127.0.0.1") -> AsyncIterator[tuple[str, str]]:
    """``mcp --local --http HOST:PORT`` running; yields its URL and its token."""
    port = free_port()
    token_file = tmp_path / "token"
    args = ["mcp", "--local", "--config", str(local_config(tmp_path))]
    args += ["--http", f"{host}:{port}", "--token-file", str(token_file)]
    server = subprocess.Popen([CLI, *args], env=dict(os.environ), stderr=subprocess.PIPE)
    try:
        lines = []  # the banner, after any warning (the sandbox's, as root)
        while len(lines) < 20 and not any(b"Streamable HTTP" in line for line in lines):
            lines.append(await asyncio.to_thread(server.stderr.readline))
        assert any(b"Streamable HTTP" in line for line in lines), lines
        assert token_file.stat().st_mode & 0o777 == 0o600
        yield f"http://{host}:{port}/mcp", token_file.read_text().strip()
    finally:
        server.send_signal(signal.SIGINT)
        await asyncio.to_thread(server.wait, 30)


async def test_streamable_http_refuses_a_call_without_the_token(tmp_path: Path) -> None:
    async with mcp_http(tmp_path) as (url, token):
        async with httpx.AsyncClient() as http:
            bare = await http.post(url, json=INITIALIZE, headers=HEADERS)
            wrong = await http.post(
                url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer nope"}
            )
        assert bare.status_code == wrong.status_code == 401
        assert "bearer token" in bare.text
        authorized = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with (
            authorized,
            streamable_http_client(url, http_client=authorized) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            answer = await session.call_tool("get_url", {})
        assert {"open", "snapshot", "click"} <= names
        assert init.server_info.version == __version__
        assert not answer.is_error and "about:blank" in answer.content[0].text


async def test_every_loopback_address_refuses_a_rebound_host_or_a_page(tmp_path: Path) -> None:
    """On 127.0.0.2 too (the SDK guards only 127.0.0.1, localhost and ::1 by itself)."""
    async with mcp_http(tmp_path, "127.0.0.2") as (url, token):
        signed = {**HEADERS, "Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient() as http:
            rebound = await http.post(
                url,
                json=INITIALIZE,
                headers={**signed, "Host": "evil.example", "Origin": "http://evil.example"},
            )
            page = await http.post(
                url, json=INITIALIZE, headers={**signed, "Origin": "http://evil.example"}
            )
            served = await http.post(url, json=INITIALIZE, headers=signed)
    assert rebound.status_code == 421, rebound.text
    assert page.status_code == 403, page.text
    assert served.status_code == 200, served.text


async def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("a-token-long-enough-to-use\n")
    token_file.chmod(0o644)
    args = ["mcp", "--local", "--config", str(local_config(tmp_path))]
    args += ["--http", f"127.0.0.1:{free_port()}", "--token-file", str(token_file)]
    server = subprocess.Popen([CLI, *args], stderr=subprocess.PIPE, text=True)
    try:
        said = ""  # until it exits, or says it serves
        while (line := await asyncio.to_thread(server.stderr.readline)) and "HTTP on" not in line:
            said += line
        assert not line, "it served with a token file others may read"
    finally:
        server.send_signal(signal.SIGINT)
        await asyncio.to_thread(server.wait, 30)
    assert server.returncode == 2 and "too open" in said, said
    assert "a-token-long-enough" not in said
