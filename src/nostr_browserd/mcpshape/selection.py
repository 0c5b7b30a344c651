"""Which tools an MCP server offers: ``--caps`` (families) and ``--tools`` (names) narrow the
list the way playwright-mcp's capabilities do, and a remote daemon's answer narrows it to what
the agent's role allows.

Apart from :mod:`.listing` because ``mcp --local`` parses the options before it launches
Chromium, and MCP's wire types (a tenth of a second to import) are not needed for that.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ..commands.registry import Registry, Tool


@dataclass(frozen=True)
class Selection:
    """Which tools to offer: ``caps`` are families, ``names`` are tools; empty means all."""

    caps: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, caps: Iterable[str], names: Iterable[str]) -> Selection:
        """From repeatable or comma-separated options (``--caps navigate,read``)."""
        return cls(frozenset(_words(caps)), frozenset(_words(names)))

    def check(self, registry: Registry) -> None:
        """Refuse a family or tool name the registry does not know (a typo lists nothing)."""
        families = {t.family for t in registry}
        unknown = sorted(self.caps - families) + sorted(n for n in self.names if n not in registry)
        if unknown:
            raise ValueError(
                f"unknown tool families or names: {', '.join(unknown)}; "
                f"families are {', '.join(sorted(families))}"
            )

    def offers(self, tool: Tool[Any]) -> bool:
        """Whether ``tool`` is in the selection (a name given explicitly always is)."""
        if not self.caps and not self.names:
            return True
        return tool.family in self.caps or tool.name in self.names


def listed(
    registry: Registry, selection: Selection, allowed: Collection[str] | None = None
) -> list[Tool[Any]]:
    """The registry's tools in order, narrowed by ``selection`` and by ``allowed`` names."""
    return [t for t in registry if selection.offers(t) and (allowed is None or t.name in allowed)]


def _words(values: Iterable[str]) -> list[str]:
    return [w.strip() for v in values for w in v.split(",") if w.strip()]
