"""A remote browser at local speed: ``mcp --to`` against playwright-mcp's local call (issue 24 §6).

One MCP client (the official ``mcp`` SDK's stdio client, the same for every side) calls a
snapshot and a click on the same page, on:

- ``ours contextvm``: ``nostr-browserd mcp --to NPUB --transport contextvm``, over a loopback
  relay (its own process) to a running daemon (``nostr-browserd run``, its own process, real
  Chromium): MCP's ``tools/call`` in a CEP-4 gift wrap;
- ``ours dm``: the same with ``--transport dm`` (our NIP-17 envelope), as a second key;
- ``ours local``: ``nostr-browserd mcp --local``, the same tool in the MCP server's own process
  (no relay): what the tool costs us apart from the remote hop;
- ``playwright-mcp``: its local stdio server, its own browser.

The sides are interleaved (one call of each, then the next round), the first round is a
warm-up.  ``get_url`` over each of ours is the remote hop's floor (a tool that does nearly
nothing), for the profile.  Every result's characters are reported: the sides answer
differently (playwright-mcp's click returns a snapshot of the page too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from nostr_browserd.daemon.keyfile import write_new_key
from nostr_browserd.daemon.local_ws import OWNER
from nostr_browserd.nostr.nip19 import npub_encode
from tests.fixtures.cluster import Workers, process_tree, toml

from . import load, sites
from .peers import playwright_mcp_args
from .targets import REMOTE_BASE

CLI = str(Path(sys.executable).with_name("nostr-browserd"))
PAGES = {
    # page name → (path under the docs or the admin, the element clicked: a line of both
    # snapshots; a click that changes nothing, so that every round clicks the same page)
    "django admin": ("admin", "admin/", 'button "Toggle theme'),
    "controlflow": ("docs", sites.DOC_PAGES["controlflow"], 'textbox "Quick search"'),
}
MATCHED = {"snapshot": "snapshot", "click": "click", "get_url": "floor"}  # audit's → ours
REF = re.compile(r"\[ref=([a-z0-9]+)\]| @((?:f\d+)?e\d+)(?=:|$)")  # theirs, ours


@dataclass(frozen=True)
class Dialect:
    """How one server names the tools measured, and the arguments of its click."""

    open: str
    snapshot: str
    click: str
    floor: str | None
    click_args: Callable[[str, str], dict[str, Any]]


OURS = Dialect("open", "snapshot", "click", "get_url", lambda ref, element: {"ref": "@" + ref})
PLAYWRIGHT = Dialect(
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    None,
    lambda ref, element: {"element": element, "target": ref},
)


@dataclass
class Side:
    """One MCP server under test and the client session to it."""

    name: str
    server: StdioServerParameters
    dialect: Dialect
    audit: Path | None = None  # the state file whose audit log holds this side's calls
    controller: str = OWNER  # whose calls they are there
    session: ClientSession | None = None
    pid: int | None = None  # the server's process (its browser is among its descendants)
    timed: list[dict[str, Any] | None] = field(default_factory=list)  # rows, None: warm-up

    def dispatched(self) -> None:
        """Each kept row gets the dispatcher's milliseconds of its calls, from the audit log
        (parse, police, run, encode and send the reply), matched to the calls in order."""
        if self.audit is None:
            return
        with contextlib.closing(sqlite3.connect(f"file:{self.audit}?mode=ro", uri=True)) as db:
            durations = db.execute(
                "SELECT tool, duration_ms FROM audit WHERE controller = ? ORDER BY n",
                (self.controller,),
            ).fetchall()
        calls = [(tool, ms) for tool, ms in durations if tool in MATCHED]
        for row, (tool, ms) in zip(self.timed, calls, strict=True):
            if row is not None:
                assert MATCHED[tool] == row["tool"], (tool, row["tool"])
                row.setdefault("dispatch_ms", []).append(ms)

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, str]:
        """Milliseconds of one ``tools/call`` as the client sees it, and the result's text."""
        assert self.session is not None
        started = time.perf_counter()
        result = await self.session.call_tool(tool, arguments)
        ms = (time.perf_counter() - started) * 1000
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error or text.startswith("### Error"):
            raise RuntimeError(f"{self.name} {tool}: {text[:300]}")
        return ms, text


def ref_of(snapshot: str, needle: str) -> str:
    """The ref (``eN``) on the snapshot line that holds ``needle``."""
    for line in snapshot.splitlines():
        found = REF.search(line)
        if needle in line and found:
            return found[1] or found[2]
    raise RuntimeError(f"{needle!r} is not in the snapshot:\n{snapshot[:3000]}")


def environment() -> dict[str, str]:
    """This process's environment, without settings meant for another daemon."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NOSTR_BROWSERD_")}


def ours(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=CLI, args=["mcp", *args], env=environment())


@dataclass
class Remote:
    """The sides and the processes behind ``mcp --to``: the relay's and the daemon's."""

    sides: list[Side]
    relay: int
    daemon: int

    def cpu(self, side: Side) -> dict[str, float]:
        """CPU seconds so far of each process group one call of ``side`` may use."""
        groups = {"server": process_tree(side.pid or 0)}
        if side.controller != OWNER:  # mcp --to: the call runs in the relay and the daemon too
            daemon = process_tree(self.daemon)
            groups |= {"relay": [self.relay], "daemon": daemon[:1], "daemon's browser": daemon[1:]}
        return {group: load.cpu_of(pids) for group, pids in groups.items()}


@contextlib.contextmanager
def servers(where: Path) -> Iterator[Remote]:
    """The relay and the daemon, running, and every side's server command (started by
    :func:`connected`)."""
    keys = {name: where / f"{name}.nsec" for name in ("contextvm", "dm")}
    pubkeys = {name: write_new_key(path) for name, path in keys.items()}
    local = where / "local.toml"
    browser = {"command_timeout": 60, **sites.BENCH_BROWSER}
    local.write_text(toml({"state": {"dir": str(where / "local")}, "browser": browser}))
    output = tempfile.mkdtemp(prefix="bench-mcp-", dir=where)
    with load.relay() as (url, relay):
        workers = Workers(where / "daemon", [url], None, pubkeys.values(), local=False)
        try:
            daemon = workers.launch()
            daemon.wait_ready()
            to = ["--to", npub_encode(workers.pubkey), "--relay", url]
            audit = daemon.home / "state" / "state.sqlite3"

            def remote(transport: str) -> Side:
                args = [*to, "--key", str(keys[transport]), "--transport", transport]
                return Side(f"ours {transport}", ours(*args), OURS, audit, pubkeys[transport])

            local_side = Side(
                "ours local",
                ours("--local", "--config", str(local)),
                OURS,
                where / "local" / "state.sqlite3",
            )
            node = StdioServerParameters(
                command="node", args=playwright_mcp_args(output), env=environment()
            )
            sides = [remote("contextvm"), remote("dm"), local_side]
            yield Remote([*sides, Side(REMOTE_BASE, node, PLAYWRIGHT)], relay, daemon.pid)
        finally:
            workers.reap()


@contextlib.asynccontextmanager
async def connected(sides: list[Side]) -> AsyncIterator[None]:
    """An initialized client session to every side, its tools listed once (the SDK lists
    them before its first call anyway, to check results against their output schemas)."""
    async with contextlib.AsyncExitStack() as stack:
        for side in sides:
            before = children(os.getpid())
            read, write = await stack.enter_async_context(stdio_client(side.server))
            (side.pid,) = children(os.getpid()) - before
            side.session = await stack.enter_async_context(ClientSession(read, write))
            await side.session.initialize()
            await side.session.list_tools()
        yield


def children(pid: int) -> set[int]:
    """The processes ``pid`` started that still run."""
    return {p for p in process_tree(pid)[1:] if str(pid) == _parent(p)}


def _parent(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    return ""


async def measure(urls: dict[str, str], remote: Remote, rounds: int) -> list[dict[str, Any]]:
    """Per page, side and tool: milliseconds, characters and CPU seconds of each process
    group, for each round after the warm-up."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}

    async def timed(page: str, keep: bool, side: Side, tool: str, arguments: dict[str, Any]) -> str:
        """One call of ``side``'s ``tool`` (a :class:`Dialect` field); kept after the warm-up."""
        before = remote.cpu(side)
        ms, text = await side.call(getattr(side.dialect, tool), arguments)
        after = remote.cpu(side)
        if not keep:
            side.timed.append(None)
        else:
            row = rows.setdefault(
                (page, side.name, tool),
                {"page": page, "side": side.name, "tool": tool, "ms": [], "chars": [], "cpu": {}},
            )
            side.timed.append(row)
            row["ms"].append(ms)
            row["chars"].append(len(text))
            for group, seconds in after.items():
                row["cpu"].setdefault(group, []).append(seconds - before[group])
        return text

    for page, (_, _, needle) in PAGES.items():
        for side in remote.sides:
            await side.call(side.dialect.open, {"url": urls[page]})
        for i in range(rounds + 1):
            keep = i > 0  # the first round is a warm-up
            for side in remote.sides:
                snapshot = await timed(page, keep, side, "snapshot", {})
                click = side.dialect.click_args(ref_of(snapshot, needle), needle.split('"')[1])
                await timed(page, keep, side, "click", click)
                if side.dialect.floor is not None:
                    await timed(page, keep, side, "floor", {})
    return list(rows.values())


async def run(reps: int) -> dict[str, Any]:
    """The part of ``make bench``: ``reps`` × 10 rounds per page (calls of tens of ms on a shared
    machine need many), every side in one run."""
    load_before = os.getloadavg()
    with (
        tempfile.TemporaryDirectory(prefix="bench-remote-mcp-") as where,
        servers(Path(where)) as remote,
        sites.docs() as docs,
        sites.django_admin() as admin,
    ):
        bases = {"docs": docs, "admin": admin}
        urls = {page: bases[site] + path for page, (site, path, _) in PAGES.items()}
        async with connected(remote.sides):
            rows = await measure(urls, remote, max(reps * 10, 10))
        for side in remote.sides:
            side.dispatched()
    return {
        "rows": rows,
        "rounds": max(reps * 10, 10),
        "load": [load_before[0], os.getloadavg()[0]],
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(int(sys.argv[1]) if len(sys.argv) > 1 else 3)), indent=1))
