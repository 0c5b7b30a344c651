"""The host configurations in docs/mcp.md and from ``--print-config`` parse, and name a command
that exists with arguments ``nostr-browserd mcp`` accepts."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.cli.hosts import HOSTS, NAME
from nostr_browserd.cli.mcp import parser
from nostr_browserd.daemon.config import ControllerConfig
from tests.fixtures.paths import REPO

ROOT = REPO
CLI = Path(sys.executable).with_name(NAME)
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)


def mcp_section() -> str:
    return (ROOT / "docs" / "mcp.md").read_text()


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(mcp_section()) if lang == language]


def check_command(command: str, args: list[str]) -> None:
    """The command is ours and exists; ``mcp`` parses the arguments into a mode."""
    assert Path(command).name == NAME
    assert (CLI if command == NAME else Path(command)).is_file(), command
    assert args[0] == "mcp"
    parsed = parser().parse_args(args[1:])
    assert parsed.local or (parsed.to and parsed.key)


def check_servers(config: dict[str, Any]) -> None:
    (key,) = config
    assert key in ("mcpServers", "servers")
    for server in config[key].values():
        if server.get("type") == "http":
            assert server["url"].startswith("http://127.0.0.1:")
            assert server["headers"]["Authorization"].startswith("Bearer ")
        else:
            check_command(server["command"], server["args"])


def check_claude_add(line: str) -> None:
    words = shlex.split(line)
    assert words[:3] == ["claude", "mcp", "add"] and "--" in words
    rest = words[words.index("--") + 1 :]
    check_command(rest[0], rest[1:])


# What no host may run unasked: each reads a secret, sends data out, or changes the page or
# which tab the next command reads (the five the consent review found in alwaysAllow first).
NEVER_UNASKED = (
    "scrape",
    "cookies_get",
    "storage_local_get",
    "storage_session_get_key",
    "network_request",
    "network_requests",
    "tab_switch",
    "clipboard_read",
    "eval",
    "open",
    "click",
)


def auto_allowed(config: dict[str, Any]) -> list[str]:
    """Every tool a host config lets run unasked (Roo Code's ``alwaysAllow``, anywhere)."""
    found: list[str] = []
    for key, value in config.items():
        if key in ("alwaysAllow", "autoApprove"):
            found += value
        elif isinstance(value, dict):
            found += auto_allowed(value)
    return found


def check_allowed(allowed: list[str]) -> None:
    """What a host runs unasked: free, read-only, sending nothing out, showing no secret."""
    for name in allowed:
        tool = REGISTRY.get(name)
        assert not tool.gated and tool.read_only, name
        assert not tool.sends and not tool.reads_secrets, name
    assert not set(allowed) & set(NEVER_UNASKED)


def test_docs_json_configurations() -> None:
    found = blocks("json")
    assert len(found) >= 4
    for body in found:
        check_servers(json.loads(body))
        check_allowed(auto_allowed(json.loads(body)))


def test_docs_toml_configurations() -> None:
    found = [tomllib.loads(body) for body in blocks("toml")]
    codex = [t["mcp_servers"][NAME] for t in found if "mcp_servers" in t]
    controllers = [c for t in found for c in t.get("controllers", [])]
    assert codex and controllers
    for server in codex:
        check_command(server["command"], server["args"])
    for controller in controllers:
        assert set(controller) <= set(ControllerConfig.model_fields)
        assert controller["role"] == "full" and controller["approver"]


def test_docs_shell_lines() -> None:
    lines = [line for body in blocks("sh") for line in body.splitlines()]
    adds = [line for line in lines if line.startswith("claude mcp add")]
    assert len(adds) >= 2
    for line in adds:
        check_claude_add(line)
    assert any(line.startswith("nostr-browserd keygen agent.nsec") for line in lines)


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_print_config(host: str, tmp_path: Path) -> None:
    key = tmp_path / "agent.nsec"
    args = ["mcp", "--print-config", host, "--to", "npub1daemon", "--key", str(key)]
    run = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    if host == "claude-code":
        check_claude_add(out.strip())
    elif host == "codex":
        server = tomllib.loads(out)["mcp_servers"][NAME]
        check_command(server["command"], server["args"])
    else:
        config = json.loads(out)
        check_servers(config)
        allowed = auto_allowed(config)
        check_allowed(allowed)
        if host == "roo-code":
            assert {"snapshot", "get_text", "tab_list"} <= set(allowed)
    assert str(key) in out, "paths are filled in, absolute"
