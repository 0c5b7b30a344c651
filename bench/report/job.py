"""An agent's job, step by step: the characters each tool sends a model."""

from __future__ import annotations

from typing import Any

from .. import targets
from ..targets import TARGETS
from .figures import mark


def job_section(result: dict[str, Any]) -> list[str]:
    """The report's part: characters per step and over the job, and the target."""
    chars, steps = result["chars"], result["steps"]
    tools = list(chars)
    totals = {tool: sum(chars[tool]) for tool in tools}
    ratio, smallest = targets.job_ratio(result)
    ok = TARGETS["job_chars"].met(ratio) and result["readable"]
    shots = [i for i, step in enumerate(steps) if "snapshot" in step]
    rest = [i for i in range(len(steps)) if i not in shots]

    def part(tool: str, which: list[int]) -> int:
        return sum(chars[tool][i] for i in which)

    lines = [
        f"## {targets.JOB}",
        "",
        "Every tool adds a user on the Django admin and makes them staff: open the form, an",
        "interactive snapshot, three fills, Save, read the message, a snapshot of the user's",
        "page, tick Staff status, a snapshot again; each acts only on refs from its own latest",
        "snapshot. Characters of every reply: ours in the text a phone and an MCP host get, with",
        "`snapshot -i --delta` (beside it the JSON `ask`'s model gets); playwright-mcp over MCP,",
        "whose actions answer with the page; agent-browser's CLI with its `snapshot -i --delta`.",
        "",
        "| step | " + " | ".join(tools) + " |",
        "| --- |" + " ---: |" * len(tools),
    ]
    for i, step in enumerate(steps):
        lines.append(f"| {step} | " + " | ".join(f"{chars[t][i]:,}" for t in tools) + " |")
    lines += [
        "| **the whole job** | " + " | ".join(f"**{totals[t]:,}**" for t in tools) + " |",
        "",
        f"Where the characters go: the {len(shots)} snapshots are {part('ours', shots):,} of "
        f"ours against {part(smallest, shots):,} of {smallest}'s "
        f"({part('ours', shots) / part(smallest, shots):.2f}×), the other {len(rest)} replies "
        f"{part('ours', rest):,} against {part(smallest, rest):,} (ours name the tab, "
        "`[t1] title address`, when it moved: after open and after the click that loaded the "
        "user's page).",
        "",
        f"Target: ours ≤ {TARGETS['job_chars'].bound}× the smallest peer ({smallest}) over "
        "the whole job, "
        f"every step readable on its own: {ratio:.2f}× {mark(ok)}; the steps stand alone: "
        f"{'yes' if result['readable'] else 'no'} (the first snapshot says it is full, the last "
        "one names the ticked box, checked, by its ref). Ours' last step, as sent:",
        "",
        "```",
        result["ours_replies"][-1],
        "```",
        "",
    ]
    return lines
