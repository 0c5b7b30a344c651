"""``mcp --print-config HOST``: what to paste into an agent host, with the paths filled in.

Every host gets the same command line (this executable, ``mcp`` and the options given);
only the shape around it differs.  Roo Code's ``alwaysAllow`` lists only the tools the
registry calls safe to run unasked (``Registry.unasked_safe``: read-only, sending nothing
out, showing no secret): a tool that may change a page, carry data to an address or show a
site's cookies should be confirmed by a person (or an approver).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ..catalog import REGISTRY
from ..mcpshape.selection import Selection, listed
from .options import McpOptions

NAME = "nostr-browserd"


def command_line(args: McpOptions) -> list[str]:
    """The executable and its arguments, absolute paths for every file named."""
    exe = shutil.which(NAME) or str(Path(sys.argv[0]).resolve())
    line = [exe, "mcp"]
    if args.to:
        assert args.key is not None  # main() refuses --to without --key
        line += ["--to", args.to, "--key", str(args.key.resolve())]
        for url in args.relay:
            line += ["--relay", url]
        for url in args.discovery:
            line += ["--discovery", url]
        if args.transport != "auto":
            line += ["--transport", args.transport]
    else:
        line.append("--local")
        if args.config:
            line += ["--config", str(Path(args.config).resolve())]
    for cap in args.caps:
        line += ["--caps", cap]
    for tool in args.tools:
        line += ["--tools", tool]
    return line


def unasked_tools(args: McpOptions) -> list[str]:
    """The listed tools a host may run without asking: they change nothing, send nothing
    out and show no secret."""
    selection = Selection.parse(args.caps, args.tools)
    return [t.name for t in listed(REGISTRY, selection) if REGISTRY.unasked_safe(t.name)]


def entry(args: McpOptions) -> dict[str, object]:
    """``{"command", "args"}`` for this command line."""
    line = command_line(args)
    return {"command": line[0], "args": line[1:]}


def servers(key: str, body: dict[str, object]) -> str:
    """``{"<key>": {"nostr-browserd": body}}``, the shape every JSON host shares."""
    return json.dumps({key: {NAME: body}}, indent=2)


HOSTS: dict[str, Callable[[McpOptions], str]] = {
    "claude-code": lambda a: shlex.join(["claude", "mcp", "add", NAME, "--", *command_line(a)]),
    "claude-desktop": lambda a: servers("mcpServers", entry(a)),
    "cursor": lambda a: servers("mcpServers", entry(a)),
    "vscode": lambda a: servers("servers", {"type": "stdio", **entry(a)}),
    "roo-code": lambda a: servers(
        "mcpServers", {**entry(a), "alwaysAllow": unasked_tools(a), "disabled": False}
    ),
    "codex": lambda a: codex(command_line(a)),
}
WHERE = {
    "claude-code": "run it in your project (add --scope project for a shared .mcp.json)",
    "claude-desktop": "merge into claude_desktop_config.json",
    "cursor": "merge into .cursor/mcp.json (or ~/.cursor/mcp.json)",
    "vscode": "merge into .vscode/mcp.json",
    "roo-code": "merge into Roo Code's mcp_settings.json",
    "codex": "append to ~/.codex/config.toml",
}


def codex(line: list[str]) -> str:
    """Codex CLI's ``config.toml`` table (TOML strings are JSON strings for these values)."""
    args = ", ".join(json.dumps(a) for a in line[1:])
    return f"[mcp_servers.{NAME}]\ncommand = {json.dumps(line[0])}\nargs = [{args}]"


def print_config(args: McpOptions, parser: argparse.ArgumentParser) -> int:
    """Print ``args.print_config``'s configuration to stdout (and where it goes, to stderr)."""
    host = args.print_config
    if host not in HOSTS:
        parser.error(f"--print-config knows {', '.join(HOSTS)}; not {host!r}")
    if args.http:
        parser.error("--print-config writes stdio configurations; for --http see the README")
    if args.to and not args.key:
        parser.error("--to needs --key: the agent's own key file")
    print(HOSTS[host](args))
    print(f"({WHERE[host]})", file=sys.stderr)
    return 0
