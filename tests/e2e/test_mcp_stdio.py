"""``nostr_browserd.mcp.stdio``: MCP's stdio on the event loop's own pipes, through the mcp
SDK's stdio client, against a one-tool server (tests/fixtures/stdio_echo.py)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fixtures.mcp_client import HANDSHAKE
from tests.fixtures.paths import REPO

SERVER = [sys.executable, "-m", "tests.fixtures.stdio_echo"]
CTRL_D = b"\x04"  # a terminal's end of input, typed at the start of a line
LONG = "x" * 300_000  # one line of more than asyncio's default 64 KiB limit


async def test_a_long_line_goes_through_and_stray_output_misses_the_wire(tmp_path: Path):
    """Piped (as every host starts us): no worker thread carries the lines, a message longer
    than asyncio's default line limit arrives whole, and what the process writes to its
    stdout meanwhile lands on stderr instead of breaking a message."""
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(REPO))
    with (tmp_path / "stderr").open("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("echo", {"text": LONG})
            again = await session.call_tool("echo", {"text": "short"})
        errlog.seek(0)
        stderr = errlog.read()
    answer = json.loads(result.content[0].text)
    assert not result.is_error and answer["text"] == LONG
    assert json.loads(again.content[0].text)["text"] == "short"
    assert not [t for t in answer["threads"] if "worker" in t.lower()], answer["threads"]
    assert "stray output on fd 1" in stderr and "a stray print" in stderr


def test_stdin_from_a_terminal_is_served_the_sdks_way():
    """Neither a pipe nor a socket (a terminal here, or a file): the SDK's threads read it.

    The user ends the input (Ctrl-D) while the call still runs: it is answered all the same,
    and the server exits 0 (files and pipes: tests/e2e/test_mcp_batch.py)."""
    messages = [
        *HANDSHAKE,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "from a terminal", "pause_ms": 200}},
        },
    ]
    terminal, its_end = pty.openpty()
    proc = subprocess.Popen(
        SERVER, stdin=its_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    os.close(its_end)
    try:
        typed = "".join(json.dumps(m) + "\n" for m in messages)
        os.write(terminal, typed.encode() + CTRL_D)
        out, stderr = proc.communicate(timeout=60)
    finally:
        os.close(terminal)
    assert proc.returncode == 0, stderr
    answers = {m.get("id"): m for m in map(json.loads, out.decode().splitlines())}
    answer = json.loads(answers[2]["result"]["content"][0]["text"])
    assert answer["text"] == "from a terminal"
    assert [t for t in answer["threads"] if "worker" in t.lower()], answer["threads"]
    assert b"stray output on fd 1" in stderr
