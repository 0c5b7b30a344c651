"""``nostr-browserd mcp < requests.jsonl``: a batch of JSON-RPC lines from a file or a pipe.

Its input ends right after the last line, while the calls it asked for still run: every
request read is answered before the process exits (0), and a line cut off mid-way gets a
JSON-RPC parse error instead of silence.  Local (a real Chromium on the test site) and
``--to`` (a daemon on a real relay), each with stdin a file (the SDK's threads read it)
and a pipe (the event loop reads it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.e2e.test_mcp_local import local_config
from tests.fixtures.daemon import SdkController, start_daemon_fixture  # noqa: F401
from tests.fixtures.mcp_client import CLI

Stdin = Literal["file", "pipe"]
WAIT_MS = 300  # a bounded pause, running beside the open (the calls of a batch run at once)
CUT_OFF = '{"jsonrpc": "2.0", "id": 9, "method": "tools/ca'
"""The last line, without its end: what a writer killed mid-request leaves."""


def batch(site_url: str) -> str:
    """The handshake, two calls that each take a moment, and a line cut off mid-way."""
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "batch", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "open", "arguments": {"url": f"{site_url}/form.html"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"ms": WAIT_MS}},
        },
    ]
    return "".join(json.dumps(m) + "\n" for m in messages) + CUT_OFF


async def run_batch(
    args: list[str], text: str, stdin: Stdin, tmp_path: Path
) -> tuple[int, dict[Any, dict[str, Any]], str]:
    """``nostr-browserd mcp ARGS`` with ``text`` as its whole input: exit code, answers by
    id, stderr."""
    if stdin == "file":
        requests = tmp_path / "requests.jsonl"
        requests.write_text(text)
        with requests.open("rb") as source:
            proc = await asyncio.create_subprocess_exec(
                CLI, "mcp", *args, stdin=source, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        written = None
    else:
        proc = await asyncio.create_subprocess_exec(
            CLI, "mcp", *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        written = text.encode()
    out, err = await asyncio.wait_for(proc.communicate(written), 120)
    messages = map(json.loads, out.decode().splitlines())
    answers = {m["id"]: m for m in messages if "id" in m}  # not the notifications
    return proc.returncode or 0, answers, err.decode()


def assert_all_answered(code: int, answers: dict[Any, dict[str, Any]], stderr: str) -> None:
    assert code == 0, stderr
    opened, waited = answers[2].get("result"), answers[3].get("result")
    assert opened and not opened.get("isError") and "Form" in opened["content"][0]["text"], answers
    assert waited and not waited.get("isError") and str(WAIT_MS) in waited["content"][0]["text"]
    assert answers[None]["error"]["code"] == -32700, answers  # JSON-RPC's parse error
    assert set(answers) == {1, 2, 3, None}, answers


@pytest.mark.parametrize("stdin", ["file", "pipe"])
async def test_local_answers_every_request_before_it_exits(
    stdin: Stdin, site_url: str, tmp_path: Path
) -> None:
    args = ["--local", "--config", str(local_config(tmp_path))]
    assert_all_answered(*await run_batch(args, batch(site_url), stdin, tmp_path))


@pytest.mark.parametrize("stdin", ["file", "pipe"])
async def test_to_answers_every_request_before_it_exits(
    stdin: Stdin, nostr_relay_url: str, site_url: str, start_daemon, tmp_path: Path
) -> None:
    """Each call here is a round trip over the relay: still running when the input ends."""
    agent = SdkController([nostr_relay_url])
    key = agent.write_key(tmp_path / "agent.nsec")
    role = {"pubkey": agent.npub, "name": "agent", "role": ["open", "wait"]}
    daemon = await start_daemon([nostr_relay_url], controllers=[role])
    args = ["--to", daemon.npub, "--key", str(key), "--relay", nostr_relay_url]
    assert_all_answered(*await run_batch(args, batch(site_url), stdin, tmp_path))
