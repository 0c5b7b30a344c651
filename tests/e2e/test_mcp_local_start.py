"""``mcp --local`` answers a host before its browser is up, and says so when it cannot start.

A host starts the server and sends ``initialize`` and ``tools/list`` at once; neither needs
Chromium, so they are answered while it launches, and the first call waits for it.  Here the
launch is held: the configured executable is a script that waits on a FIFO the test writes
only after those answers came (with the old order, ``initialize`` waited for the launch and
the test could never let it go).  A launch that fails is answered on every call instead of a
traceback, and logged once.  The driver keeps Node's compile cache where the user keeps
caches, as Python keeps its bytecode.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.catalog import REGISTRY
from tests.e2e.test_mcp_local import local_config
from tests.fixtures.mcp_client import CLI, HANDSHAKE

GUARD = 60  # seconds: a deadlock guard, never reached by a server that answers


class Host:
    """An MCP host's side of ``mcp --local``'s stdio, one JSON-RPC line at a time."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._id = 1  # the handshake's

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> int:
        self._id += 1
        await self.send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        return self._id

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The answer to ``request_id`` (the server's notifications skipped)."""
        assert self.proc.stdout is not None
        async with asyncio.timeout(GUARD):
            while True:
                line = await self.proc.stdout.readline()
                assert line, f"the server exited before answering {request_id}"
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        request = await self.request("tools/call", {"name": tool, "arguments": arguments})
        return (await self.answer(request))["result"]


@asynccontextmanager
async def host(
    config: Path, env: dict[str, str] | None = None, stderr: int | IO[Any] = asyncio.subprocess.PIPE
) -> AsyncIterator[Host]:
    """``mcp --local --config CONFIG`` started (in ``env``), its ``initialize`` answered."""
    proc = await asyncio.create_subprocess_exec(
        CLI, "mcp", "--local", "--config", str(config), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=stderr, limit=2**24, env=env,
    )  # fmt: skip
    client = Host(proc)
    try:
        for message in HANDSHAKE:
            await client.send(message)
        initialized = await client.answer(1)
        assert initialized["result"]["serverInfo"]["name"] == "nostr-browserd", initialized
        yield client
    except BaseException:
        proc.kill()  # a launch still held would hold its exit
        raise
    finally:
        assert proc.stdin is not None
        if not proc.stdin.is_closing():
            proc.stdin.close()
        async with asyncio.timeout(GUARD):
            await proc.wait()


def with_executable(tmp_path: Path, script: str) -> Path:
    """The test's ``mcp --local`` config, Chromium launched through ``script``."""
    executable = tmp_path / "chromium"
    executable.write_text("#!/bin/sh\n" + script)
    executable.chmod(0o755)
    config = local_config(tmp_path)
    config.write_text(
        config.read_text().replace("[browser]\n", f'[browser]\nexecutable = "{executable}"\n')
    )
    return config


async def test_initialize_and_the_list_are_answered_while_the_browser_starts(
    tmp_path: Path, site_url: str
) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    chromium = BrowserConfig().find_executable()
    config = with_executable(tmp_path, f'read line < "{go}"\nexec "{chromium}" "$@"\n')
    async with host(config) as client:  # initialize answered, the launch still held
        listed = await client.answer(await client.request("tools/list", {}))
        assert [t["name"] for t in listed["result"]["tools"]] == [t.name for t in REGISTRY]
        opening = await client.request(
            "tools/call", {"name": "open", "arguments": {"url": f"{site_url}/form.html"}}
        )
        await asyncio.to_thread(go.write_text, "go\n")  # the launch goes on
        opened = (await client.answer(opening))["result"]
        assert not opened.get("isError"), opened
        assert "Form" in opened["content"][0]["text"]
        got = await client.call("get_url")
        assert "form.html" in got["content"][0]["text"], got


async def test_playwrights_driver_keeps_nodes_compile_cache_in_the_users_cache(
    tmp_path: Path,
) -> None:
    """As Python keeps its bytecode: the driver's next start compiles nothing again."""
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "NODE_COMPILE_CACHE"}
    async with host(local_config(tmp_path), {**env, "XDG_CACHE_HOME": str(cache)}) as client:
        opened = await client.call("open", url="about:blank")
        assert not opened.get("isError"), opened
    kept = [p for p in (cache / "nostr-browserd" / "node").rglob("*") if p.is_file()]
    assert kept, "no compile cache written"


async def test_a_session_on_pipes_runs_without_the_mcp_sdk(tmp_path: Path) -> None:
    """On pipes (as every host starts it) the session is ``mcp.plain``'s: neither the MCP SDK
    nor its wire types are imported (their server side was 0.3 s of CPU before the first
    answer), as Python's ``-X importtime`` lists what a process imports."""
    imports = tmp_path / "imports"
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with imports.open("w") as stderr:
        async with host(local_config(tmp_path), env, stderr) as client:
            opened = await client.call("open", url="about:blank")
            assert not opened.get("isError"), opened
    lines = imports.read_text().splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert "nostr_browserd.mcp.plain" in imported
    assert {name.split(".")[0] for name in imported} & {"mcp", "mcp_types"} == set()


async def test_a_browser_that_cannot_start_is_said_on_every_call(tmp_path: Path) -> None:
    config = with_executable(tmp_path, "echo 'no display here' >&2\nexit 1\n")
    async with host(config) as client:
        first = await client.call("open", url="about:blank")
        second = await client.call("get_url")
        listed = await client.answer(await client.request("tools/list", {}))
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        assert client.proc.stderr is not None
        stderr = (await client.proc.stderr.read()).decode()
    for result in (first, second):
        assert result["isError"], result
        assert result["content"][0]["text"].startswith("UNAVAILABLE: the browser did not start"), (
            result
        )
    assert listed["result"]["tools"], "the server kept serving"
    assert stderr.count("the browser did not start") == 1, stderr
    assert client.proc.returncode == 0, stderr


async def test_its_state_directory_is_made_private_and_a_readable_one_is_refused(
    tmp_path: Path,
) -> None:
    """The first ``mcp --local`` of a machine makes the state directory 0700 under a umask of
    022 (its browser folders inside would make it 0755, which ``run`` then refuses), and an
    open one is refused on every call, saying how to fix it, as ``run`` refuses it."""
    state = tmp_path / "state"
    umask = os.umask(0o022)
    try:
        async with host(local_config(tmp_path)) as client:
            opened = await client.call("open", url="about:blank")
            assert not opened.get("isError"), opened
        assert oct(state.stat().st_mode & 0o777) == "0o700"
        state.chmod(0o755)
        async with host(local_config(tmp_path)) as client:
            refused = await client.call("get_url")
    finally:
        os.umask(umask)
    assert refused["isError"], refused
    said = refused["content"][0]["text"]
    assert f"permissions 0755 for the state directory {state} are too open" in said, said
