"""Snapshots, navigation, cold start and memory: ours against Playwright and the peers.

Every tool drives its own Debian headless-shell.  Repetitions are interleaved (one of each
tool, then the next round) so that a noisy neighbour on the machine hits every tool alike;
the first round of each page is a warm-up and is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import websockets
from playwright.async_api import Page, async_playwright

from nostr_browserd.browser.chores import Chores
from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.dialogs import Dialogs
from nostr_browserd.browser.endpoints import LAUNCH_ARGS
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.browser.session import Session
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run

from .peers import (
    CHROMIUM,
    TIMEOUT_MS,
    AgentBrowser,
    McpStdio,
    PlaywrightMcp,
    mcp_snapshot_text,
)
from .sites import BENCH_BROWSER, SANDBOX, free_port

CONTROL = "Playwright goto, again"  # a second plain context: the method's own spread
REF = re.compile(r"\[ref=[a-z0-9]+\]| @(?:f\d+)?e\d+(?=:|$)", re.MULTILINE)  # theirs, ours
SMALL_MS = 300  # a page whose goto takes less is cheap to repeat, and noisier: it gets
SNAPSHOT_ROUNDS = 5  # this many times the repetitions of snapshots,
NAVIGATION_ROUNDS = 5  # and this many of navigations (library/index's open spread 61–160 ms)
# On a page whose goto takes less than FAST_MS, `open`'s margin over the control (0.05 of goto's
# time) is a couple of milliseconds, and 15 rounds left it a standard error of 0.035–0.085: the
# three tools the target compares go on alone to MARGIN_ROUNDS rounds (about 50 s a page).
FAST_MS, MARGIN_ROUNDS = 100, 60
MARGIN_TOOLS = ("Playwright goto", CONTROL, "ours open")
# Before each navigation: the page the tool before it loaded is still painting and running its
# idle work when its load event has fired.  Straight after Playwright's goto, a second plain
# context of the same browser took 1.35× goto's time on library/index; after this pause, 1.02×.
QUIET_S = 0.3
Probe = Callable[[], Awaitable[tuple[float, str]]]


async def timed(action: Awaitable[Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await action
    return (time.perf_counter() - started) * 1000, result


async def ours(session: Session, command: dict[str, Any]) -> dict[str, Any]:
    """One command through the protocol layer, as every transport runs it."""
    response = await run(REGISTRY, session, parse_request(command, REGISTRY))
    if not response["success"]:
        raise RuntimeError(f"ours {command}: {response['error']}")
    return response["data"]


class Tools:
    """Every tool, started once; ``snapshot`` and ``navigate`` probes by tool name."""

    def __init__(self) -> None:
        self.pool = BrowserPool(
            BrowserConfig(result_cap=10**9, timeout_ms=TIMEOUT_MS, **BENCH_BROWSER)
        )
        self.mcp = PlaywrightMcp()
        self.agent = AgentBrowser(f"bench{os.getpid()}")

    async def start(self) -> None:
        await self.pool.start()
        self.session = await self.pool.session("bench")
        # Playwright itself, in a plain context of the same browser: both pay the same machine.
        assert self.pool.browser is not None
        self.raw_page = await self.plain_page()
        # The same again, measured alike: how far the method itself puts goto from goto.
        self.control_page = await self.plain_page()
        await self.mcp.start()

    async def plain_page(self) -> Page:
        assert self.pool.browser is not None
        page = await (await self.pool.browser.new_context()).new_page()
        page.set_default_timeout(TIMEOUT_MS)
        return page

    async def close(self) -> None:
        await self.mcp.close()
        self.agent.close()
        await self.pool.close()

    def snapshot_probes(self) -> dict[str, Probe]:
        async def raw() -> tuple[float, str]:
            return await timed(self.raw_page.aria_snapshot(mode="ai"))

        async def mine(interactive: bool) -> tuple[float, str]:
            # full: the whole page each time, none of it left out as seen before
            command = {"tool": "snapshot", "params": {"interactive": interactive, "full": True}}
            ms, data = await timed(ours(self.session, command))
            return ms, data["snapshot"]

        async def mcp() -> tuple[float, str]:
            ms, reply = await timed(self.mcp.call("browser_snapshot"))
            return ms, mcp_snapshot_text(reply)

        async def agent(*flags: str) -> tuple[float, str]:
            seconds, out = await self.agent.timed("snapshot", *flags)
            return seconds * 1000, out

        return {
            "Playwright raw": raw,
            "ours": lambda: mine(False),
            "ours -i": lambda: mine(True),
            "playwright-mcp": mcp,
            "agent-browser": agent,
            "agent-browser -i": lambda: agent("-i"),
        }

    def navigate_probes(self, url: str) -> dict[str, Callable[[], Awaitable[float]]]:
        async def goto(page: Page) -> float:
            return (await timed(page.goto(url)))[0]

        async def mine() -> float:
            return (await timed(ours(self.session, {"tool": "open", "params": {"url": url}})))[0]

        async def mcp() -> float:
            return (await timed(self.mcp.call("browser_navigate", url=url)))[0]

        async def agent() -> float:
            return (await self.agent.timed("open", url))[0] * 1000

        return {
            "Playwright goto": lambda: goto(self.raw_page),
            CONTROL: lambda: goto(self.control_page),
            "ours open": mine,
            "playwright-mcp navigate": mcp,
            "agent-browser open": agent,
        }


async def visit(tools: Tools, url: str) -> bool:
    """Every tool to ``url`` once (a warm-up); whether it is a small page (``SMALL_MS``).

    By the faster of the two plain contexts: at load 4–6 (2026-12-06 05:54) the warm-up goto
    of library/index and of the admin's add-user page took over 300 ms, and each page got 3
    rounds instead of 15.
    """
    times = {tool: await navigate() for tool, navigate in tools.navigate_probes(url).items()}
    return min(times["Playwright goto"], times[CONTROL]) < SMALL_MS


async def navigation(tools: Tools, pages: dict[str, str], reps: int) -> list[dict[str, Any]]:
    """Per page: each tool's navigation time, one round of each tool after another.

    Each navigation starts after ``QUIET_S``, and every other round runs the tools in the
    reverse order, so that no tool is always the one after another's page.
    """
    navs: list[dict[str, Any]] = []
    for name, url in pages.items():
        print(f"  {name}", flush=True)
        runs: dict[str, list[float]] = {}
        rounds = reps * (NAVIGATION_ROUNDS if await visit(tools, url) else 1)
        await _rounds(tools.navigate_probes(url), range(rounds), runs)
        if statistics.median(runs["Playwright goto"]) < FAST_MS:
            margin = {t: p for t, p in tools.navigate_probes(url).items() if t in MARGIN_TOOLS}
            await _rounds(margin, range(rounds, MARGIN_ROUNDS), runs)
        navs += [{"page": name, "tool": t, "ms": ms} for t, ms in runs.items()]
    return navs


async def _rounds(
    probes: dict[str, Callable[[], Awaitable[float]]],
    rounds: range,
    runs: dict[str, list[float]],
) -> None:
    """Each of ``rounds``: every probe once after ``QUIET_S``, odd rounds in reverse order."""
    ordered = list(probes.items())
    for round_ in rounds:
        for tool, navigate in ordered[:: -1 if round_ % 2 else 1]:
            await asyncio.sleep(QUIET_S)
            runs.setdefault(tool, []).append(await navigate())


async def snapshots(tools: Tools, pages: dict[str, str], reps: int) -> list[dict[str, Any]]:
    """Per page: snapshot size, refs and time per tool, after one warm-up round.

    Every other round runs the tools in the reverse order, as navigations do: at 3 rounds
    in a fixed order, controlflow's snapshot came in at 1.28× and 1.00× in two runs.
    """
    snaps: list[dict[str, Any]] = []
    for name, url in pages.items():
        print(f"  {name}", flush=True)
        rounds = reps * (SNAPSHOT_ROUNDS if await visit(tools, url) else 1)
        probes = list(tools.snapshot_probes().items())
        runs = {tool: {"ms": [], "chars": [], "refs": []} for tool, _ in probes}
        for rep in range(rounds + 1):
            for tool, probe in probes[:: -1 if rep % 2 else 1]:
                gc.collect()
                ms, text = await probe()
                if rep:
                    runs[tool]["ms"].append(ms)
                    runs[tool]["chars"].append(len(text))
                    runs[tool]["refs"].append(len(REF.findall(text)))
        snaps += [{"page": name, "tool": t, **r} for t, r in runs.items()]
    return snaps


# --- cold start ------------------------------------------------------------------------

RAW_COLD = """
import asyncio, sys
from playwright.async_api import Page, async_playwright
async def main():
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=sys.argv[1])
        page = await browser.new_page()
        await page.goto("about:blank")
        print(page.url, flush=True)
        await browser.close()
asyncio.run(main())
"""


def installed() -> dict[str, str]:
    """This environment as an installed system's: Python writes the bytecode it compiles.

    A machine that sets PYTHONDONTWRITEBYTECODE compiles every module from source at each
    start; the dropped first round of the cold starts writes it, as an install (or a
    user's first run) does.
    """
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


async def cold_raw() -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RAW_COLD, CHROMIUM, stdout=asyncio.subprocess.PIPE, env=installed()
    )
    assert process.stdout is not None
    await process.stdout.readline()
    elapsed = time.perf_counter() - started
    await process.wait()
    return elapsed * 1000


async def cold_ours() -> tuple[float, dict[str, list[float]]]:
    """``nostr-browserd run`` (embedded relay, local channel) to its first answered command,
    and the start's timeline the daemon logged."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as state:
        token = secrets.token_urlsafe(32)  # the local channel's, as a client is given it
        token_file = Path(state) / "local-token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        env = {
            **installed(),
            "NOSTR_BROWSERD_STATE_DIR": state,
            "NOSTR_BROWSERD_LOCAL_PORT": str(port),
            "NOSTR_BROWSERD_LOCAL_TOKEN_FILE": str(token_file),
            "NOSTR_BROWSERD_NOSTR_EMBEDDED_RELAY_PORT": str(free_port()),
            "NOSTR_BROWSERD_BROWSER_SANDBOX": str(SANDBOX).lower(),
        }
        cli = Path(sys.executable).with_name("nostr-browserd")
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            str(cli),
            "run",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        timeline = asyncio.ensure_future(started_line(process.stderr))
        try:
            async with asyncio.timeout(120):
                while True:
                    try:
                        async with websockets.connect(
                            f"ws://127.0.0.1:{port}/agent",
                            additional_headers={"Authorization": f"Bearer {token}"},
                        ) as ws:
                            await ws.send(json.dumps({"id": 1, "tool": "get_url"}))
                            reply = json.loads(await ws.recv())
                            while reply.get("type") == "event":  # pushed, not our answer
                                reply = json.loads(await ws.recv())
                            break
                    except OSError:
                        await asyncio.sleep(0.02)
            elapsed = time.perf_counter() - started
            if not reply.get("success"):
                raise RuntimeError(f"ours cold start: {reply}")
            async with asyncio.timeout(30):
                spans = await timeline
        finally:
            timeline.cancel()
            process.terminate()
            await process.wait()
    return elapsed * 1000, spans


SPAN = re.compile(r"([a-z][a-z ]*?) (\d+\.\d+)–(\d+\.\d+)")


async def started_line(stderr: asyncio.StreamReader) -> dict[str, list[float]]:
    """The daemon's start timeline from its log (``started in …``): step → [began, ended] s."""
    async for raw in stderr:
        line = raw.decode(errors="replace")
        if "started in" in line:
            steps = line.split("started in", 1)[1].split(":", 1)[1]
            return {m[1].strip(): [float(m[2]), float(m[3])] for m in SPAN.finditer(steps)}
    raise RuntimeError("the daemon logged no start timeline")


async def cold_mcp() -> float:
    """playwright-mcp, as a host starts it, to its first answered ``tools/call``."""
    return await first_call(PlaywrightMcp(), "browser_navigate", url="about:blank")


async def cold_mcp_local() -> float:
    """``nostr-browserd mcp --local``, as a host starts it, to its first answered
    ``tools/call``: the same page as playwright-mcp's."""
    with tempfile.TemporaryDirectory(prefix="bench-cold-mcp-") as state:
        env = {
            **{k: v for k, v in installed().items() if not k.startswith("NOSTR_BROWSERD_")},
            "NOSTR_BROWSERD_STATE_DIR": state,
            "NOSTR_BROWSERD_BROWSER_SANDBOX": str(SANDBOX).lower(),
        }
        cli = str(Path(sys.executable).with_name("nostr-browserd"))
        return await first_call(McpStdio([cli, "mcp", "--local"], env), "open", url="about:blank")


async def first_call(mcp: McpStdio, tool: str, **arguments: Any) -> float:
    """From ``mcp``'s process start to its first ``tool`` answered (initialize first)."""
    started = time.perf_counter()
    try:
        await mcp.start()
        await mcp.call(tool, **arguments)
        return (time.perf_counter() - started) * 1000
    finally:
        await mcp.close()


async def cold_agent() -> float:
    agent = AgentBrowser(f"cold{os.getpid()}")
    try:
        return (await agent.timed("open", "about:blank"))[0] * 1000
    finally:
        agent.close()


async def cold_starts(reps: int) -> tuple[list[dict[str, Any]], list[dict[str, list[float]]]]:
    """Each tool's cold start, one of each after another; and our daemon's own timelines."""
    timelines = []

    async def ours() -> float:
        ms, spans = await cold_ours()
        timelines.append(spans)
        return ms

    probes = {
        "Playwright launch": cold_raw,
        "ours": ours,
        "playwright-mcp": cold_mcp,
        "ours mcp --local": cold_mcp_local,
        "agent-browser": cold_agent,
    }
    runs: dict[str, list[float]] = {}
    for rep in range(reps + 1):
        for tool, probe in probes.items():
            ms = await probe()
            if rep:
                runs.setdefault(tool, []).append(ms)
    return [{"tool": t, "ms": ms} for t, ms in runs.items()], timelines[1:]


# --- memory ----------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every process under ``pid``; one that ends while we look is left out."""
    children = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                children += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return []
    return [c for child in children for c in (child, *descendants(child))]


def cpu_seconds(pid: int, ended: bool = False) -> float:
    """User and system CPU of ``pid`` and every process under it, in seconds; with
    ``ended``, that of the ones that ended under them too (a closed tab's renderer, whose
    CPU would otherwise leave the sum with it)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for each in (pid, *descendants(pid)):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11 : 15 if ended else 13]) / ticks
    return total


def browser_pss_mb(root: int | None = None) -> float:
    """PSS of every Chromium process under ``root`` (default: this process), which runs one."""
    total = 0
    for pid in descendants(root or os.getpid()):
        try:
            if "chromium" not in Path(f"/proc/{pid}/cmdline").read_text():
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1024


async def settle() -> None:
    gc.collect()
    await asyncio.sleep(1.0)


async def memory(url: str, counts: list[int]) -> list[dict[str, Any]]:
    """PSS with 1…N contexts, each with one tab on ``url``: ours (a controller each), raw."""
    rows = []
    pool = BrowserPool(BrowserConfig(**BENCH_BROWSER))
    await pool.start()
    try:
        for n in range(1, max(counts) + 1):
            session = await pool.session(f"controller-{n}")
            await ours(session, {"tool": "open", "params": {"url": url}})
            if n in counts:
                await settle()
                rows.append({"tool": "ours", "contexts": n, "pss_mb": browser_pss_mb()})
    finally:
        await pool.close()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        for n in range(1, max(counts) + 1):
            page = await (await browser.new_context()).new_page()
            await page.goto(url)
            if n in counts:
                await settle()
                rows.append({"tool": "Playwright raw", "contexts": n, "pss_mb": browser_pss_mb()})
        await browser.close()
    return rows


# --- where open's time goes --------------------------------------------------------------

# The steps of ``open`` through the protocol that are timed (``commands.protocol._run``): the
# tool itself, inside the dialog watch; the chores its page's handlers started (the load's
# announcement); the result's state (url, title, tab).
PHASES = {"until": (Dialogs, "until"), "settle": (Chores, "settle"), "state": (Session, "state")}


async def open_phases(url: str, reps: int) -> dict[str, list[float]]:
    """``open`` through the protocol with its steps timed (``PHASES``), against ``page.goto``
    on the same tab (what the protocol adds) and on a plain context of the same browser (what
    our tab's listeners, title observer and popup guard add); ``cpu_*`` is this process's CPU
    (ms) over each navigation.  On a browser of its own; rounds alternate the order."""
    times: dict[str, list[float]] = {
        k: [] for k in (*PHASES, "open", "goto", "plain", "cpu_open", "cpu_goto", "cpu_plain")
    }
    originals = {name: getattr(owner, method) for name, (owner, method) in PHASES.items()}

    def timed_phase(name: str) -> Callable[..., Awaitable[Any]]:
        async def phase(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await originals[name](self, *args, **kwargs)
            finally:
                times[name].append((time.perf_counter() - started) * 1000)

        return phase

    pool = BrowserPool(BrowserConfig(**BENCH_BROWSER))
    await pool.start()
    try:
        session = await pool.session("phases")
        assert pool.browser is not None
        plain = await (await pool.browser.new_context()).new_page()
        navigations = {
            "open": lambda: ours(session, {"tool": "open", "params": {"url": url}}),
            "goto": lambda: session.page.goto(url),
            "plain": lambda: plain.goto(url),
        }
        for navigate in navigations.values():  # a warm-up
            await navigate()
        await originals["settle"](session.chores)
        for name, (owner, method) in PHASES.items():
            setattr(owner, method, timed_phase(name))
        for round_ in range(reps):
            for name, navigate in list(navigations.items())[:: -1 if round_ % 2 else 1]:
                await asyncio.sleep(QUIET_S)
                cpu = time.process_time()
                times[name].append((await timed(navigate()))[0])
                times[f"cpu_{name}"].append((time.process_time() - cpu) * 1000)
                await originals["settle"](session.chores)  # goto's load announcement
    finally:
        for name, (owner, method) in PHASES.items():
            setattr(owner, method, originals[name])
        await pool.close()
    return times
