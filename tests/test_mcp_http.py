"""``nostr-browserd mcp --local --http 127.0.0.1:PORT``: the bearer token is required."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.fixtures.mcp_client import CLI
from tests.fixtures.relays import free_port
from tests.test_mcp_local import local_config

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


async def test_streamable_http_refuses_a_call_without_the_token(tmp_path: Path) -> None:
    port = free_port()
    token_file = tmp_path / "token"
    args = ["mcp", "--local", "--config", str(local_config(tmp_path))]
    args += ["--http", f"127.0.0.1:{port}", "--token-file", str(token_file)]
    server = subprocess.Popen([CLI, *args], env=dict(os.environ), stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        lines = []  # the banner, after any warning (the sandbox's, as root)
        while len(lines) < 20 and not any(b"Streamable HTTP" in line for line in lines):
            lines.append(await asyncio.to_thread(server.stderr.readline))
        assert any(b"Streamable HTTP" in line for line in lines), lines
        token = token_file.read_text().strip()
        assert token_file.stat().st_mode & 0o777 == 0o600
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
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            answer = await session.call_tool("get_url", {})
        assert {"open", "snapshot", "click"} <= names
        assert not answer.is_error and "about:blank" in answer.content[0].text
    finally:
        server.send_signal(signal.SIGINT)
        await asyncio.to_thread(server.wait, 30)
