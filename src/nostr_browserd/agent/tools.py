"""Which tools ``ask`` offers a model, and which of its calls need the person's consent.

The default set is small and focused (reading, navigating, the usual interactions, tabs):
a model given all of the registry's tools chooses worse and costs more.  The config can
name another set; login and key tools are never in the registry's catalog, and ``ask``
itself is never offered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..commands.registry import Registry
from .providers import ToolSpec

DEFAULT_TOOLS = (
    "snapshot",
    "get_text",
    "get_url",
    "open",
    "back",
    "click",
    "fill",
    "select",
    "check",
    "press",
    "scroll",
    "wait_for",
    "wait_for_text",
    "tab_list",
    "tab_new",
    "tab_switch",
    "tab_close",
    "scrape",
    "screenshot",
    "find_text",
    "vault_list",
    "fill_credential",
    "login_with",
)
# ask itself; and the vault's management: a model is never given a value, nor may it drop one.
NEVER_OFFERED = frozenset({"ask", "vault_add", "vault_remove"})
# What a commit looks like: a click on such a target always asks, whatever auto_approve says.
COMMIT = re.compile(
    r"\b(submit|pay|purchase|place\s+order|check\s*out|send|confirm|delete|buy)\b", re.I
)


def unknown_tools(registry: Registry, names: Iterable[str]) -> list[str]:
    """The names the config gives that are not tools ``ask`` may offer."""
    return [n for n in names if n not in registry or n in NEVER_OFFERED]


def tool_specs(registry: Registry, names: Iterable[str]) -> list[ToolSpec]:
    """The specs of ``names`` (registry order kept as given), JSON Schema from each tool."""
    specs = []
    for name in names:
        if name in NEVER_OFFERED or name not in registry:
            continue
        tool = registry.get(name)
        schema = tool.params.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        description = tool.description + (
            " (gated: may need the person's approval)" if tool.gated else ""
        )
        specs.append(ToolSpec(name, description, schema))
    return specs


def needs_consent(
    tool: str, gated: bool, acts_through: bool, description: str, auto_approve: Iterable[str]
) -> bool:
    """Whether a call must wait for the person: gated, and not auto-approved.

    ``acts_through``: the call runs other tools (a batch, a find with an action), which
    auto_approve never covers.  A target that reads like a commit (submit, pay, place
    order…) always asks.
    """
    if not gated:
        return False
    if acts_through or COMMIT.search(description):
        return True
    return tool not in set(auto_approve)


def progress_line(tool: str, target: str, params: dict[str, Any]) -> str:
    """What the person reads while a step runs: "reading the page", "clicking …"."""
    if tool in ("snapshot", "get_text", "get_url", "find_text", "tab_list", "screenshot"):
        return "reading the page"
    if tool in ("open", "tab_new") and params.get("url"):
        return f"opening {str(params['url'])[:100]}"
    if tool == "scrape":
        return f"fetching {str(params.get('url', ''))[:100]}"
    return f"{tool} {target}".strip()
