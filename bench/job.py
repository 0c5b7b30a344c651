"""A model's whole job, in characters: what each tool sends back over a typical agent task.

On the Django admin, every tool adds a user and makes them staff, step by step as a model
would: open the form, take an interactive snapshot, fill three fields, click Save, read the
message, snapshot the user's page, tick "Staff status", snapshot again.  Each tool acts only
on refs from its own latest snapshot, and runs the job in its usual idiom: ours through the
protocol layer in the text form a phone and an MCP host get (``render_text``; the JSON that
``ask``'s model gets is measured beside it), with ``snapshot -i --delta``; playwright-mcp
over MCP stdio, whose actions answer with the page; agent-browser's CLI, with its own
``snapshot -i --delta``.  The characters are every step's whole reply.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.browser.session import Session
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run
from nostr_browserd.commands.render import render_text

from .peers import TIMEOUT_MS, AgentBrowser, PlaywrightMcp
from .sites import BENCH_BROWSER

PATH = "admin/auth/user/add/"
PASSWORD = "Bench-pw-1234!"
MESSAGE_JS = "() => document.querySelector('.messagelist').innerText"
# How each tool reads the message the page after Save shows.  Ours answers a click that opens a
# page once that page has loaded, as playwright-mcp's does, so the read is one command, as a
# model would send it.  agent-browser's click may answer before the page is there: its read
# waits for the message, then for the load event, after which the admin's widgets are built.
STEPS = (
    "open the add-user form",
    "interactive snapshot",
    "fill Username",
    "fill Password",
    "fill Password confirmation",
    "click Save",
    "read the message",
    "snapshot the user's page",
    "check Staff status",
    "snapshot again",
)
Step = Callable[[str, str], Awaitable[str]]  # (step's kind, its argument) → the reply's text


def ref(snapshot: str, role: str, name: str) -> str:
    """The ref of the element ``role "name…"`` in a tool's snapshot text, without the @
    (``@e5`` in ours, ``[ref=e5]`` in playwright-mcp's, ``[required, ref=e5]`` in
    agent-browser's)."""
    line = rf'{role} "{re.escape(name)}[^"]*"[^\n]*?'
    match = re.search(rf"{line}(?:[\[ ]ref=(\w+)[\],]| @(\w+)(?::|$))", snapshot, re.MULTILINE)
    if match is None:
        raise RuntimeError(f'no {role} "{name}" in the snapshot:\n{snapshot[:2000]}')
    return match.group(1) or match.group(2)


async def job(step: Step, url: str, user: str) -> list[str]:
    """The job's replies, one per step of ``STEPS``; ``step`` speaks one tool's idiom."""
    replies = [await step("open", url)]
    page = await step("snapshot", "")
    replies.append(page)
    fields = (("Username", user), ("Password", PASSWORD), ("Password confirmation", PASSWORD))
    for name, value in fields:
        replies.append(await step("fill", f"{ref(page, 'textbox', name + ':')} {value}"))
    replies.append(await step("click", ref(page, "button", "Save")))
    replies.append(await step("read", ".messagelist"))
    page = await step("snapshot", "")
    replies.append(page)
    staff = ref(page, "checkbox", "Staff status")
    replies.append(await step("check", staff))
    replies.append(await step("snapshot", ""))
    return replies


def ours_step(session: Session, json_chars: list[int]) -> Step:
    async def one(command: str) -> tuple[str, int]:
        response = await run(REGISTRY, session, parse_request(command, REGISTRY))
        if not response["success"]:
            raise RuntimeError(f"ours {command}: {response['error']}")
        return render_text(response), len(json.dumps(response, ensure_ascii=False))

    async def step(kind: str, arg: str) -> str:
        commands = {
            "open": [f"open {arg}"],
            "snapshot": ["snapshot -i --delta"],
            "read": [f"get text {arg}"],
        }.get(kind) or [_action(kind, arg)]
        replies = [await one(command) for command in commands]
        json_chars.append(sum(chars for _, chars in replies))
        return "\n".join(text for text, _ in replies)

    return step


def _action(kind: str, arg: str) -> str:
    """``fill @e5 value`` / ``click @e7`` / ``check @e9`` from ``"e5 value"``; a password
    is filled on purpose (``--secret``), as the daemon asks."""
    target, _, value = arg.partition(" ")
    if not value:
        return f"{kind} @{target}"
    return f'{kind} @{target} "{value}"' + (" --secret" if value == PASSWORD else "")


def mcp_step(mcp: PlaywrightMcp) -> Step:
    async def step(kind: str, arg: str) -> str:
        target, _, value = arg.partition(" ")
        if kind == "open":
            return await mcp.call("browser_navigate", url=arg)
        if kind == "snapshot":
            return await mcp.call("browser_snapshot")
        if kind == "read":
            return await mcp.call("browser_evaluate", function=MESSAGE_JS)
        if kind == "fill":
            return await mcp.call("browser_type", element="field", target=target, text=value)
        return await mcp.call("browser_click", element=kind, target=target)  # click, check

    return step


def agent_step(agent: AgentBrowser) -> Step:
    async def step(kind: str, arg: str) -> str:
        target, _, value = arg.partition(" ")
        if kind == "open":
            return await agent.run("open", arg)
        if kind == "snapshot":
            return await agent.run("snapshot", "-i", "--delta")
        if kind == "read":
            waited = await agent.run("wait", arg) + await agent.run("wait", "--load", "load")
            return waited + await agent.run("get", "text", arg)
        return await agent.run(kind, f"@{target}", *([value] if value else []))

    return step


def readable(replies: list[str], staff_checked: str) -> bool:
    """Whether ours' steps stand alone: each snapshot says what it is, the last one names
    the box it ticked, checked, by the ref it had, once Save moved the tab to the user's
    page a reply said so (the tab's line comes only when it is news), and every line the
    user's page left out says what it is the same as and how to see it."""
    snapshots = [replies[STEPS.index(s)] for s in ("interactive snapshot", "snapshot again")]
    page = replies[STEPS.index("snapshot the user's page")]
    runs = [line for line in page.splitlines() if line.startswith("- (")]
    said = all("same as before" in run and "snapshot --full" in run for run in runs)
    moved = replies[STEPS.index("click Save") : STEPS.index("read the message") + 1]
    told = any(
        line.startswith("[t1] ") and line.endswith("/change/")
        for reply in moved
        for line in reply.splitlines()
    )
    return (
        "⚠ The full snapshot:" in snapshots[0] and staff_checked in snapshots[1] and told and said
    )


async def measure(admin: str) -> dict[str, Any]:
    """Every tool's replies over the job on ``admin`` (the Django site's base URL)."""
    url = admin + PATH
    nonce = secrets.token_hex(3)
    chars: dict[str, list[int]] = {}
    pool = BrowserPool(BrowserConfig(result_cap=10**9, timeout_ms=TIMEOUT_MS, **BENCH_BROWSER))
    await pool.start()
    try:
        json_chars: list[int] = []
        ours = await job(ours_step(await pool.session("job"), json_chars), url, f"o-{nonce}")
    finally:
        await pool.close()
    chars["ours"] = [len(r) for r in ours]
    chars["ours (JSON, as ask's model gets it)"] = json_chars
    page = ours[STEPS.index("snapshot the user's page")]
    staff = f'~ - checkbox "Staff status" [checked] @{ref(page, "checkbox", "Staff status")}'
    mcp = PlaywrightMcp()
    await mcp.start()
    try:
        chars["playwright-mcp"] = [len(r) for r in await job(mcp_step(mcp), url, f"m-{nonce}")]
    finally:
        await mcp.close()
    agent = AgentBrowser(f"job{nonce}")
    try:
        chars["agent-browser"] = [len(r) for r in await job(agent_step(agent), url, f"a-{nonce}")]
    finally:
        agent.close()
    return {
        "steps": list(STEPS),
        "chars": chars,
        "readable": readable(ours, staff),
        "ours_replies": ours,
    }
