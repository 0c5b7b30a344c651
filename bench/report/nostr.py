"""One request over Nostr: the DM round trip, the relay's connections, `mcp --to`."""

from __future__ import annotations

from typing import Any

from .. import targets
from ..targets import TARGETS
from .figures import mark, med, pages_of, spread


def round_trip_section(times: dict[str, list[float]]) -> list[str]:
    base = med(times["sdk"])
    names = {
        "sdk": "minimal responder, nostr-sdk crypto",
        "ours": "minimal responder, our crypto",
        "tool": "… + the get_url tool",
        "daemon": "the daemon (guard, audit, dispatch, outbox)",
        "contextvm": "the daemon over ContextVM (MCP tools/call, CEP-4 wrap)",
    }
    lines = [
        "## DM round trip, one requester (in one process)",
        "",
        "A NIP-17 `get_url` request and its reply through a loopback relay (bench_dm.py),",
        "the responders interleaved; last, the same daemon and tool over ContextVM.",
        "",
        "| responder | p50 ms | p90 ms | × minimal |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, values in times.items():
        ordered = sorted(values)
        lines.append(
            f"| {names.get(key, key)} | {med(values):.2f} | "
            f"{ordered[int(len(ordered) * 0.9)]:.2f} | {med(values) / base:.2f}× |"
        )
    return [*lines, ""]


def relay_section(times: dict[str, list[float]]) -> list[str]:
    base = med(times["same"])
    names = {
        "same": "a raw responder replies on the connection that carried the request",
        "separate": "… on a second connection of its own",
        "pool": "our RelayPool (separate publish connection, TCP_QUICKACK)",
    }
    lines = [
        "## Request→reply through a relay, by where the reply is published (bench_relay.py)",
        "",
        "| responder | p50 ms | × same connection |",
        "| --- | ---: | ---: |",
    ]
    for key, values in times.items():
        lines.append(f"| {names.get(key, key)} | {med(values):.2f} | {med(values) / base:.2f}× |")
    return [*lines, ""]


def mean_ms(seconds: list[float]) -> float:
    return sum(seconds) * 1000 / len(seconds)


def hop(row: dict[str, Any]) -> float:
    """Median of a remote call's time beyond the daemon's own for it."""
    return med([ms - d for ms, d in zip(row["ms"], row["dispatch_ms"], strict=True)])


def remote_mcp_section(result: dict[str, Any]) -> list[str]:
    """``mcp --to`` over a loopback relay against playwright-mcp's local call, per page and
    tool; where the time goes when the target is not met."""
    rows = result["rows"]
    by = {(r["page"], r["side"], r["tool"]): r for r in rows}
    sides = list(dict.fromkeys(r["side"] for r in rows))
    groups = ["server", "relay", "daemon", "daemon's browser"]
    lines = [
        f"## {targets.REMOTE}",
        "",
        "One MCP client (the `mcp` SDK's stdio client) calls a snapshot and a click on the same",
        f"page on each server, {result.get('rounds', '')} rounds interleaved after a warm-up",
        "round (bench/remote_mcp.py):",
        "`nostr-browserd mcp --to` over a loopback relay (its own process) to a running daemon",
        "(`nostr-browserd run`, its own process and Chromium), by ContextVM and by our DM",
        "envelope; `nostr-browserd mcp --local` (the same tool in the MCP server's process);",
        "playwright-mcp's local stdio server. The click is on an element that changes nothing",
        "(the admin's theme toggle, the docs' search box); playwright-mcp's click returns a",
        "snapshot too, and our snapshot is capped at 20,000 characters by default (the rest",
        "is paged). CPU milliseconds per call (the mean: /proc counts in 10 ms ticks) are read",
        "for the server's process tree (the `mcp` process, or the local server with its",
        "browser) and, for `mcp --to`, the relay, the daemon and the daemon's browser. Load",
        f"average {result['load'][0]:.1f} before this part and {result['load'][1]:.1f} after.",
        "",
        "| page | tool | server | characters | ms (min–max) | × playwright-mcp | CPU ms / call: "
        + " | ".join(groups)
        + " |",
        "| --- | --- | --- | ---: | ---: | ---: |" + " ---: |" * len(groups),
    ]
    goal = TARGETS["remote_call"]
    ratios = {side: targets.remote_ratios(rows, side) for side in sides}
    verdicts = [goal.met(v) for v in ratios[targets.REMOTE_SIDE].values()]
    for page in pages_of(rows):
        for tool in targets.REMOTE_TOOLS:
            for side in sides:
                r = by[(page, side, tool)]
                ratio = ratios[side][f"{page} {tool}"]
                note = f" {mark(goal.met(ratio))}" if side == targets.REMOTE_SIDE else ""
                cpu = [f"{mean_ms(r['cpu'][g]):.1f}" if g in r["cpu"] else "" for g in groups]
                lines.append(
                    f"| {page} | {tool} | {side} | {med(r['chars']):,.0f} | "
                    f"{med(r['ms']):,.1f} ({spread(r['ms'], digits=1)}) | {ratio:.2f}×{note} | "
                    + " | ".join(cpu)
                    + " |"
                )
    lines += [
        "",
        f"Target: `mcp --to` (ContextVM, the default transport) ≤ {goal.bound}× "
        f"playwright-mcp's call: {sum(verdicts)} of {len(verdicts)} met.",
        "",
    ]
    if all(verdicts):
        return lines
    lines += [
        "Where the time goes (medians, ms). `dispatch` is the daemon's own time from its",
        "audit log (parse, police, run the tool, encode, send the reply and wait for the",
        "relay's OK); `local` is the same for `mcp --local`, the tool with no relay. What the",
        "remote call adds to that is its `hop`: the MCP client's stdio, `mcp --to`'s",
        "encryption, both relay legs and the daemon's intake (unwrap, replay guard, queue).",
        "`get_url`, a tool that does next to nothing, gives the hop's floor.",
        "",
        "| page | tool | playwright-mcp | ours local: call | dispatch | ContextVM: call | "
        "dispatch | hop | DM: call | hop |",
        "| --- | --- |" + " ---: |" * 8,
    ]
    for page in pages_of(rows):
        for tool in ("snapshot", "click", "floor"):
            local, cvm, dm = (by[(page, f"ours {s}", tool)] for s in ("local", "contextvm", "dm"))
            base = by.get((page, "playwright-mcp", tool))
            cells = [
                f"{med(base['ms']):.1f}" if base else "–",
                f"{med(local['ms']):.1f}",
                f"{med(local['dispatch_ms']):.1f}",
                f"{med(cvm['ms']):.1f}",
                f"{med(cvm['dispatch_ms']):.1f}",
                f"{hop(cvm):.1f}",
                f"{med(dm['ms']):.1f}",
                f"{hop(dm):.1f}",
            ]
            name = "get_url" if tool == "floor" else tool
            lines.append(f"| {page} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]
