"""How monitors and schedules read in messages and lists: times, one line each, the news."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..store.watch_rows import WatchRow
from .when import show_interval, zone


def clock(moment: float, tz: str = "UTC") -> str:
    """``2026-12-06 08:00:00 UTC``: a time as a message shows it."""
    return datetime.fromtimestamp(moment, zone(tz)).strftime("%Y-%m-%d %H:%M:%S ") + tz


def public(spec: dict[str, Any]) -> dict[str, Any]:
    """What a reply shows of a monitor's spec (not where its messages go)."""
    hidden = ("scheme", "reply_to", "text")
    return {k: v for k, v in spec.items() if k not in hidden}


def describe_monitor(ident: str, spec: dict[str, Any]) -> str:
    """``monitor m1 watches https://… (.price) every 15m, writing when …``."""
    what = f"monitor {ident} watches {spec['url']}"
    what += f" ({spec['selector']})" if spec.get("selector") else ""
    what += f" every {show_interval(int(spec['every']))}"
    if spec["mode"] == "contains":
        what += f", writing when it contains {spec['needle']!r}"
    elif spec["mode"] == "missing":
        what += f", writing when {spec['needle']!r} is gone"
    return what + (", with a picture" if spec.get("screenshot") else "")


def listed(row: WatchRow) -> dict[str, Any]:
    """One item for ``monitor list`` / ``schedule list`` in JSON."""
    state = {k: v for k, v in row.state.items() if k != "text"}  # the baseline stays home
    return {"id": row.id, **public(row.spec), **state, "next": row.due}


def summary(row: WatchRow) -> str:
    """One item for ``monitor list`` / ``schedule list`` in text."""
    state = row.state
    if row.kind == "monitor":
        line = describe_monitor(row.id, row.spec)
    else:
        line = f"schedule {row.id} ({row.spec['when']}, {row.spec['tz']}): {row.spec['command']}"
    if state.get("paused"):
        return line + "; paused"
    last = state.get("checked") or state.get("ran")
    if last:
        line += f"; last {clock(float(last))}: {state.get('outcome')}"
    if state.get("changed"):
        line += f"; last change {clock(float(state['changed']))}"
    if int(state.get("failures", 0)):
        line += f"; failing ({state['failures']} in a row)"
    return line + f"; next {clock(row.due)}"


def news_message(row: WatchRow, event: str, head: str, diff: str) -> str:
    """A monitor's message: ``monitor <id>: <address> <what happened>`` and the diff, or the
    same as JSON for a monitor made in JSON."""
    spec = row.spec
    first = f"monitor {row.id}: {spec['url']} {head}"
    if spec.get("text"):
        return first + (f"\n{diff}" if diff else "")
    return json.dumps(
        {
            "monitor": row.id,
            "url": spec["url"],
            "selector": spec.get("selector"),
            "event": event,
            "message": first,
            "diff": diff,
            "at": row.state.get("checked"),
        },
        ensure_ascii=False,
    )
