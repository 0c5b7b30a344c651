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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from mcp_types import INVALID_REQUEST, PARSE_ERROR, RequestId

from tests.e2e.test_mcp_local import local_config
from tests.fixtures.daemon import SdkController, start_daemon_fixture  # noqa: F401
from tests.fixtures.mcp_client import CLI, HANDSHAKE

Stdin = Literal["file", "pipe"]
WAIT_MS = 300  # a bounded pause, running beside the open (the calls of a batch run at once)
CUT_OFF = '{"jsonrpc": "2.0", "id": 9, "method": "tools/ca'
"""The last line, without its end: what a writer killed mid-request leaves."""


def call(request_id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def lines(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m) + "\n" for m in [*HANDSHAKE, *messages])


def batch(site_url: str) -> str:
    """The handshake, two calls that each take a moment, and a line cut off mid-way."""
    opening = call(2, "open", url=f"{site_url}/form.html")
    return lines(opening, call(3, "wait", ms=WAIT_MS)) + CUT_OFF


@dataclass
class Outcome:
    """What ``mcp`` did with a batch: its exit code, its answers by id, the error codes it
    gave lines it could not read (id null), and its stderr."""

    code: int
    answers: dict[RequestId, dict[str, Any]]
    unread: list[int]
    stderr: str

    def result(self, request_id: int) -> str:
        """The text of a call's successful result."""
        result = self.answers[request_id].get("result")
        assert result and not result.get("isError"), self
        return result["content"][0]["text"]


async def run_batch(args: list[str], text: str, stdin: Stdin, tmp_path: Path) -> Outcome:
    """``nostr-browserd mcp ARGS`` with ``text`` as its whole input, from a file or a pipe."""
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
    answers = [m for m in map(json.loads, out.decode().splitlines()) if "id" in m]
    return Outcome(
        code=proc.returncode or 0,
        answers={m["id"]: m for m in answers if m["id"] is not None},
        unread=[m["error"]["code"] for m in answers if m["id"] is None],
        stderr=err.decode(),
    )


def assert_all_answered(outcome: Outcome) -> None:
    assert outcome.code == 0, outcome.stderr
    assert "Form" in outcome.result(2) and str(WAIT_MS) in outcome.result(3)
    assert outcome.unread == [PARSE_ERROR], outcome
    assert set(outcome.answers) == {1, 2, 3}, outcome


@pytest.mark.parametrize("stdin", ["file", "pipe"])
async def test_local_answers_every_request_before_it_exits(
    stdin: Stdin, site_url: str, tmp_path: Path
) -> None:
    args = ["--local", "--config", str(local_config(tmp_path))]
    assert_all_answered(await run_batch(args, batch(site_url), stdin, tmp_path))


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
    assert_all_answered(await run_batch(args, batch(site_url), stdin, tmp_path))


async def test_a_call_the_batch_cancels_is_not_waited_for(tmp_path: Path) -> None:
    """A client that cancels a call expects no answer to it: the end does not wait for one.

    A blank line asks nothing; JSON that is no JSON-RPC message is an invalid request."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    text = lines(call(2, "wait", ms=60_000), cancel, call(3, "wait", ms=WAIT_MS))
    text += "\n" + json.dumps({"jsonrpc": "2.0", "id": 4}) + "\n"
    args = ["--local", "--config", str(local_config(tmp_path))]
    outcome = await run_batch(args, text, "file", tmp_path)
    assert outcome.code == 0, outcome.stderr
    assert str(WAIT_MS) in outcome.result(3)
    assert set(outcome.answers) == {1, 3}, outcome
    assert outcome.unread == [INVALID_REQUEST], outcome
