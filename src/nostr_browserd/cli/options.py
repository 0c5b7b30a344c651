"""From argparse's namespace to a subcommand's typed options, at the edge of ``cli/``; and
the options of ``mcp``, which its server and ``--print-config`` both read."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, TypeVar

T = TypeVar("T")


def parsed(cls: type[T], args: argparse.Namespace) -> T:
    """``cls`` (a dataclass of options) from the parsed arguments of the same names."""
    return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class McpOptions:
    """``mcp``'s options: where the browser is (``local`` or ``to``), what to list, how to
    serve, or which host's configuration to print."""

    local: bool = False
    to: str | None = None
    config: Path | None = None
    key: Path | None = None
    relay: list[str] = field(default_factory=list)
    discovery: list[str] = field(default_factory=list)
    timeout: float = 60.0
    transport: Literal["auto", "contextvm", "dm"] = "auto"
    caps: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    http: str | None = None
    token_file: Path | None = None
    print_config: str | None = None
    verbose: bool = False
