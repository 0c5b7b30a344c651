"""The peers, driven the way their users drive them: playwright-mcp over MCP stdio, agent-browser
through its CLI.  Both are pinned in bench/package.json and use Debian's Chromium.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODULES = HERE / "node_modules"
CHROMIUM = "/usr/bin/chromium-headless-shell"
MCP_CLI = MODULES / "@playwright" / "mcp" / "cli.js"
# The package ships one native binary per platform; its JS launcher wants Node 24, the
# binary itself does not.
AGENT_BROWSER = MODULES / "agent-browser" / "bin" / "agent-browser-linux-x64"
# genindex-all's snapshot takes seconds; on a loaded machine, tens: no tool may give up first.
TIMEOUT_MS = 300_000


def versions() -> dict[str, str]:
    """The installed peers' versions, for the report."""
    found = {}
    for name in ("@playwright/mcp", "agent-browser"):
        package = MODULES / name / "package.json"
        if package.exists():
            found[name] = json.loads(package.read_text())["version"]
    return found


def playwright_mcp_args(output: str) -> list[str]:
    """playwright-mcp's command line after ``node``: headless, in-memory profile, our Chromium."""
    return [
        str(MCP_CLI),
        "--headless",
        "--isolated",
        "--no-sandbox",
        "--executable-path",
        CHROMIUM,
        "--output-dir",
        output,
        "--timeout-action",
        str(TIMEOUT_MS),
    ]


class McpStdio:
    """One MCP server over stdio, started as a host starts it: ``argv`` (in ``env``, by
    default this process's), with a scratch directory ``output`` it may write to."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.output = tempfile.mkdtemp(prefix="bench-mcp-")
        self.argv, self.env = argv, env
        self._id = 0

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
            limit=2**27,
        )
        await self.rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "nostr-browserd-bench", "version": "1"},
            },
        )
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        await self.process.stdin.drain()

    async def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.process is not None and self.process.stdout is not None
        self._id += 1
        await self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        async with asyncio.timeout(300):
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    raise RuntimeError(f"{self.argv[0]} exited")
                message = json.loads(line)
                if message.get("id") == self._id:
                    if "error" in message:
                        raise RuntimeError(f"{self.argv[0]}: {message['error']}")
                    return message["result"]

    async def call(self, tool: str, **arguments: Any) -> str:
        """A tool's text result; an error result raises."""
        result = await self.rpc("tools/call", {"name": tool, "arguments": arguments})
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if result.get("isError") or text.startswith("### Error"):
            raise RuntimeError(f"{self.argv[0]} {tool}: {text[:300]}")
        return text

    async def close(self) -> None:
        if self.process is not None and self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                async with asyncio.timeout(10):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        shutil.rmtree(self.output, ignore_errors=True)


class PlaywrightMcp(McpStdio):
    """One playwright-mcp server over stdio (its own browser, in-memory profile)."""

    def __init__(self) -> None:
        super().__init__([])
        self.argv = ["node", *playwright_mcp_args(self.output)]


def mcp_snapshot_text(reply: str) -> str:
    """The YAML of a browser_snapshot reply (between its ```yaml fence)."""
    start = reply.find("```yaml\n")
    end = reply.rfind("\n```")
    return reply[start + 8 : end] if start >= 0 and end > start else reply


class AgentBrowser:
    """agent-browser's CLI against one named session (its daemon starts on first use)."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.env = {
            **os.environ,
            "AGENT_BROWSER_EXECUTABLE_PATH": CHROMIUM,
            "AGENT_BROWSER_DEFAULT_TIMEOUT": str(TIMEOUT_MS),
        }

    async def run(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            str(AGENT_BROWSER),
            "--session",
            self.session,
            *args,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=2**27,
        )
        async with asyncio.timeout(300):
            out, err = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"agent-browser {args[0]}: {(err or out).decode()[:300]}")
        return out.decode()

    async def timed(self, *args: str) -> tuple[float, str]:
        """Wall time of one CLI command as a user pays it, and its output."""
        started = time.perf_counter()
        out = await self.run(*args)
        return time.perf_counter() - started, out

    def close(self) -> None:
        subprocess.run(
            [str(AGENT_BROWSER), "--session", self.session, "close"],
            env=self.env,
            capture_output=True,
            timeout=60,
            check=False,
        )
