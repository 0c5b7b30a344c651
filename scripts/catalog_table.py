"""Print the tool catalog (docs/tools.md) from the registry, or check the page against it.

.venv/bin/python scripts/catalog_table.py           # print the table
.venv/bin/python scripts/catalog_table.py --write   # replace it in docs/tools.md
.venv/bin/python scripts/catalog_table.py --check   # exit 1 when docs/tools.md is out of date
"""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.grammar import usage

PAGE = Path(__file__).resolve().parent.parent / "docs" / "tools.md"
START, END = "<!-- catalog:start -->", "<!-- catalog:end -->"


def table() -> str:
    """One row per tool, grouped by family in registration order."""
    lines = [
        f"{len(REGISTRY)} tools. *Gated* tools change the page or its state; *free* ones read.",
        "",
        "| family | tool | | text form | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    families = list(dict.fromkeys(t.family for t in REGISTRY))
    tools = sorted(REGISTRY, key=lambda t: families.index(t.family))
    for family, members in groupby(tools, key=lambda t: t.family):
        for i, tool in enumerate(members):
            kind = "gated" if tool.gated else "free"
            text = usage(tool).removeprefix("usage: ")
            text, description = (s.replace("|", "\\|") for s in (text, tool.description))
            lines.append(
                f"| {family if i == 0 else ''} | `{tool.name}` | {kind} | `{text}` "
                f"| {description} |"
            )
    return "\n".join(lines)


def replaced(readme: str) -> str:
    """The page with the block between the markers regenerated."""
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if "--write" in argv:
        PAGE.write_text(replaced(PAGE.read_text()))
    elif "--check" in argv:
        current = PAGE.read_text()
        if replaced(current) != current:
            print("docs/tools.md is out of date: run scripts/catalog_table.py --write")
            return 1
    else:
        print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
