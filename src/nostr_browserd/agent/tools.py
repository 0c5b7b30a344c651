"""Which tools ``ask`` offers a model (which of its calls need consent: daemon/consent.py).

The default set is small and focused (reading, navigating, the usual interactions, tabs):
a model given all of the registry's tools chooses worse and costs more.  The config can
name another set; login and key tools are never in the registry's catalog, and ``ask``
itself is never offered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
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
# ask and resume themselves (the person's), and the vault's management: a model is never
# given a value, nor may it drop one.
NEVER_OFFERED = frozenset({"ask", "resume", "vault_add", "vault_remove"})


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
            " (gated: may need the person's approval)" if tool.gated or tool.sends else ""
        )
        specs.append(ToolSpec(name, description, schema))
    return specs


def progress_line(tool: str, target: str, params: dict[str, Any]) -> str:
    """What the person reads while a step runs: "reading the page", "clicking …"."""
    if tool in ("snapshot", "get_text", "get_url", "find_text", "tab_list", "screenshot"):
        return "reading the page"
    if tool in ("open", "tab_new") and params.get("url"):
        return f"opening {str(params['url'])[:100]}"
    if tool == "scrape":
        return f"fetching {str(params.get('url', ''))[:100]}"
    return f"{tool} {target}".strip()


@dataclass
class Snapshots:
    """Which tabs the model was shown a snapshot of in this turn: its next snapshot of one of
    them is a delta (``snapshot --delta``), unless it asks otherwise, and a snapshot of any
    other tab is whole (``--full``): it leaves out no header the model read before.

    Only this turn counts: the transcript of earlier turns may be trimmed, and a model must
    never be sent the changes to a page it no longer has.  The daemon's delta is against
    the tab's last snapshot, of the same document and options, or it is the whole page.
    """

    tabs: set[str] = field(default_factory=set)
    tab: str | None = None  # the active tab, as the last result said

    def params(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """The call's params: ``delta`` on for a snapshot of a tab the model has seen, and
        ``full`` for one of a tab it has not."""
        if tool != "snapshot":
            return params
        if self.tab not in self.tabs:
            return {"full": True, **params}
        return params if "delta" in params else {**params, "delta": True}

    def saw(self, response: dict[str, Any]) -> None:
        """Note which tab is active after a call, and whether the model got its snapshot."""
        data = response.get("data")
        if not response.get("success") or not isinstance(data, dict):
            return
        self.tab = data.get("tab") or self.tab
        if isinstance(data.get("snapshot"), str) and self.tab is not None:
            self.tabs.add(self.tab)
