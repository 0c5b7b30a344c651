"""The catalog: every tool family registered on one ``REGISTRY``, plus ``help``.

A family is a module with ``TOOLS = Registry()`` and its tools declared on it; adding
a family means writing that module and listing it in ``FAMILIES``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .agent import command as agent
from .commands.grammar import usage
from .commands.registry import Params, Registry, ToolContext
from .tools import (
    annotate,
    batch,
    clipboard,
    debug,
    dialogs,
    diff,
    elements,
    events,
    fetch,
    files,
    find,
    forms,
    frames,
    interact,
    keyboard,
    navigate,
    network,
    output,
    pdf,
    pointer,
    read,
    record,
    recording,
    saved_state,
    schedule,
    script,
    settings,
    storage,
    stream,
    tabs,
    teardown,
    vault,
    wait,
    windows,
)

FAMILIES = (
    navigate,
    read,
    elements,
    interact,
    forms,
    keyboard,
    pointer,
    find,
    wait,
    tabs,
    teardown,
    output,
    script,
    files,
    fetch,
    storage,
    saved_state,
    clipboard,
    settings,
    batch,
    frames,
    dialogs,
    debug,
    network,
    recording,
    record,
    pdf,
    annotate,
    diff,
    windows,
    events,
    stream,
    vault,
    schedule,
    agent,
)

REGISTRY = Registry()
for family in FAMILIES:
    REGISTRY.include(family.TOOLS)


class HelpParams(Params):
    """Optionally, the tool to describe in full."""

    tool: str | None = Field(None, description="a tool name, for its params")


def describe(registry: Registry, name: str | None) -> dict[str, Any]:
    """The catalog (name, gated or free, description), or one tool's schema and usage."""
    if name:
        tool = registry.get(name.replace(" ", "_"))
        return {**tool.schema(), "usage": usage(tool)}
    return {
        "tools": [
            {"name": t.name, "gated": t.gated, "description": t.description} for t in registry
        ]
    }


@REGISTRY.tool(
    "help", family="meta", gated=False, params=HelpParams, args=("*tool",), needs_session=False
)
async def help_(session: Any, params: HelpParams, ctx: ToolContext) -> dict[str, Any]:
    """List every tool, or with a tool name, its params and usage."""
    return describe(ctx.registry, params.tool)
