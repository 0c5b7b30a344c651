"""The scheduler: monitors and schedules kept in the state store, run when they fall due.

One task sleeps until the next due time (or until something changes) and starts what is due;
the store is the truth, read again before each run, so a removed or paused item never runs
and a restart finds every item where it was.  At start, what fell due while the daemon was
down runs once, soon and spread out (``when.due_at_start``).

- A **check** reads the watched text on a page of its own (``check.read_watched``), at most
  ``[monitors] concurrency`` at once and each within the command timeout, and compares it
  with the baseline kept in the row.  A change, a failure streak reaching
  ``failures_before_notice`` and the recovery after it are each said once, to the controller
  that made the monitor, in the scheme of the request that made it.
- A **run** hands the schedule's command to the dispatcher (``Dispatcher.scheduled``) as if
  the controller sent it then: in their lane, after the commands they sent before it; its
  role, its approver, the commit rule.  Its reply comes
  as a message headed ``schedule <id> (<when>):``, its files with it.  A run due while the
  previous one still goes is skipped, and the next message says so.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Error as PlaywrightError

from ...browser.refs import first_line
from ...commands.protocol import Request, is_text, parse_request
from ...dm.messages import Carrier, Scheme, is_dm
from ...errors import BrowserdError, ErrorCode
from ...supervise import supervise
from ...tools.navigate import address
from ...tools.schedule import (
    WATCH_TOOLS,
    MonitorAddParams,
    MonitorId,
    ScheduleAddParams,
    ScheduleId,
)
from ...waits import set_within
from ..admission import Caller, Standing, check_role
from ..config import MonitorsConfig
from ..dispatch import Dispatcher
from ..store.watch_rows import Kind, WatchRow
from .check import Reading, as_file, read_watched
from .outcome import judge
from .shown import clock, describe_monitor, listed, news_message, public, summary
from .when import Rule, due_at_start, parse_interval, parse_when, show_interval

log = logging.getLogger(__name__)

Key = tuple[Kind, str, str]  # kind, owner, id
Response = dict[str, Any]
IDLE = 3600.0  # seconds the loop sleeps with nothing due
STORE_RETRY = 60.0  # seconds before an item the store could not read is tried again
LATE = 1.0  # seconds an item's stored due time may be ahead of ours and still be due
REFRESH = 30.0  # seconds between two reads of every item (those other workers made)
NO_CHAT = (
    "Monitors and schedules write to you by direct message, and this caller has no chat to"
    " write to (the local channel, mcp --local, mcp --http): send it from your Nostr chat"
    " app, or through mcp --to."
)


@dataclass(frozen=True)
class Address:
    """Where a monitor's or schedule's files go: a reply address (``dm.messages``) citing the
    request that made it."""

    sender: str
    scheme: Carrier
    event_id: str


class Scheduler:
    """Monitors and schedules: the tools that manage them, and the task that runs them."""

    def __init__(self, dispatcher: Dispatcher, settings: MonitorsConfig, timeout: float) -> None:
        """``timeout``: a check's deadline (the command timeout)."""
        self.dispatcher, self.settings, self.timeout = dispatcher, settings, timeout
        self.store = dispatcher.store
        self._due: dict[Key, float] = {}
        self._running: set[Key] = set()  # schedules whose command runs now
        self._firing: set[Key] = set()  # items being looked at now (a check, a run's start)
        self._locks: dict[Key, asyncio.Lock] = {}
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Load every item; what fell due while the daemon was down runs once, soon."""
        now = time.time()
        kinds: tuple[Kind, ...] = ("monitor", "schedule")
        for kind in kinds:
            for row in await self.store.watches(kind):
                if row.state.get("paused"):
                    continue
                due = due_at_start(row.due, now, f"{row.owner}/{row.id}", self._window(row))
                if due != row.due:
                    row.due = due
                    await self.store.watch_save(row)
                self._due[(row.kind, row.owner, row.id)] = due
        self._loop = supervise("monitors and schedules", self._serve)

    async def close(self) -> None:
        """Stop the loop and whatever runs now (a check, a run waiting for its approver)."""
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _window(self, row: WatchRow) -> float:
        """How far a missed item may be spread after a start: within the shortest interval
        allowed (so soon), and within its own."""
        every = row.spec.get("every")
        least = float(self.settings.min_interval)
        return min(float(every), least) if isinstance(every, int | float) else least

    async def _serve(self) -> None:
        refreshed = time.monotonic()
        while True:
            if time.monotonic() - refreshed >= min(REFRESH, self._lease):
                refreshed = time.monotonic()
                await self._refresh()
            now = time.time()
            for key, due in list(self._due.items()):
                if due <= now:
                    del self._due[key]
                    self._spawn(self._fire(key))
            wait = min(self._due.values(), default=now + IDLE) - now
            wait = min(wait, REFRESH, self._lease)
            self._wake.clear()
            await set_within(self._wake, max(wait, 0.01))  # a stop's cancel is never lost

    @property
    def _lease(self) -> float:
        """How long a controller's lease lasts; without workers, :data:`REFRESH`."""
        worker = self.dispatcher.worker
        return float(getattr(worker, "lease", REFRESH)) if worker is not None else REFRESH

    async def _mine(self, owner: str) -> bool:
        """Whether this worker serves ``owner`` now (taking its lease when it is free), so
        that with several workers a due item runs once, where its controller's commands
        run, and moves with it."""
        worker = self.dispatcher.worker
        return worker is None or await worker.renew(owner)

    async def _refresh(self) -> None:
        """Learn the items other workers made or moved, and forget removed ones: the store
        is the truth, and a controller that moves here brings its monitors."""
        try:
            rows = [*await self.store.watches("monitor"), *await self.store.watches("schedule")]
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return
        kept = {(r.kind, r.owner, r.id): r for r in rows if not r.state.get("paused")}
        for key in [k for k in self._due if k not in kept]:
            del self._due[key]
        for key, row in kept.items():
            if key not in self._due and key not in self._firing | self._running:
                self._due[key] = row.due

    def _plan(self, key: Key, due: float | None) -> None:
        """Run ``key`` at ``due`` (None: not until asked again)."""
        if due is None:
            self._due.pop(key, None)
        else:
            self._due[key] = due
        self._wake.set()

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fire(self, key: Key) -> None:
        """Run one due item, as the store has it now."""
        kind, owner, ident = key
        self._firing.add(key)
        try:
            row = await self.store.watch(kind, owner, ident)
            if row is None or row.state.get("paused"):
                return
            if not self.dispatcher.admission.logged_in():  # logged out: nothing runs
                self._plan(key, time.time() + STORE_RETRY)
                return
            if owner not in self.dispatcher.controllers:  # off the allow-list: kept, not run
                self._plan(key, time.time() + IDLE)
                return
            if row.due > time.time() + LATE:  # another worker ran it meanwhile: its new time
                self._plan(key, row.due)
                return
            if not await self._mine(owner):  # the worker serving the controller runs it
                self._plan(key, time.time() + self._lease)
                return
            if kind == "monitor":
                await self._check(row)
            else:
                await self._run(row)
        except BrowserdError as exc:
            log.error("%s %s of %s: %s", kind, ident, owner[:12], exc.message)
            self._plan(key, time.time() + STORE_RETRY)
        except Exception:
            log.exception("%s %s of %s failed", kind, ident, owner[:12])
            self._plan(key, time.time() + STORE_RETRY)
        finally:
            self._firing.discard(key)

    # --- the tools ---------------------------------------------------------------------

    async def run(self, caller: Caller, request: Request) -> Response:
        """One of the monitor and schedule tools, for ``caller`` (admitted already)."""
        if caller.standing is Standing.ASK:
            raise BrowserdError(ErrorCode.FORBIDDEN, f"{request.tool} is not for ask.")
        asked = None if caller.is_local else self.dispatcher.current_message(caller.owner)
        if asked is None:
            raise BrowserdError(ErrorCode.FORBIDDEN, NO_CHAT)
        scheme: Scheme = asked.scheme if is_dm(asked.scheme) else "nip17"
        origin = {"scheme": scheme, "reply_to": asked.event_id, "text": request.text}
        _, params = self.dispatcher.registry.validate(request.tool, request.params)
        tool = request.tool
        if isinstance(params, MonitorAddParams):
            data = await self._add_monitor(caller.owner, params, origin)
        elif isinstance(params, ScheduleAddParams):
            data = await self._add_schedule(caller, params, origin)
        elif isinstance(params, MonitorId | ScheduleId):
            data = await self._act(caller.owner, tool, params.id)
        else:
            data = await self._list(caller.owner, "monitor" if "monitor" in tool else "schedule")
        if request.text:
            data = {"text": data["text"]}
        return {"id": request.id, "success": True, "data": data}

    async def _room_for_one(self, owner: str) -> None:
        limit = self.settings.max_per_controller
        if await self.store.watch_count(owner) >= limit:
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"You have {limit} monitors and schedules, the most [monitors]"
                " max_per_controller allows: remove one first.",
            )

    def _at_least(self, seconds: float, what: str) -> None:
        least = self.settings.min_interval
        if seconds < least:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                f"{what} is under [monitors] min_interval ({show_interval(least)}): make it"
                f" {show_interval(least)} or longer.",
            )

    async def _add_monitor(
        self, owner: str, params: MonitorAddParams, origin: dict[str, Any]
    ) -> dict[str, Any]:
        every = parse_interval(params.every)
        self._at_least(every, f"every {params.every}")
        session = await self.dispatcher.browser.session(owner)
        url = address(session, params.url)
        await session.reach.refuse_url(url)  # the network policy, as open says it
        await self._room_for_one(owner)
        mode = "contains" if params.contains else "missing" if params.missing else "change"
        spec = {
            "url": url,
            "selector": params.selector,
            "every": every,
            "mode": mode,
            "needle": params.contains or params.missing,
            "screenshot": params.screenshot,
            **origin,
        }
        now = time.time()
        ident = await self.store.watch_add("monitor", owner, spec, {}, now)
        self._plan(("monitor", owner, ident), now)
        watched = describe_monitor(ident, spec)
        text = (
            f"{watched}. First check: now ({clock(now)}); it records what the page shows and"
            " writes to you when that changes."
        )
        return {"id": ident, **public(spec), "first_check": now, "text": text}

    async def _add_schedule(
        self, caller: Caller, params: ScheduleAddParams, origin: dict[str, Any]
    ) -> dict[str, Any]:
        assert caller.controller is not None
        tz = params.tz or self.settings.timezone
        rule = parse_when(params.when, tz)
        now = time.time()
        self._at_least(rule.shortest(now), params.when)
        command = parse_request(params.command, self.dispatcher.registry)
        if command.tool in WATCH_TOOLS:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "A schedule runs a command, not another schedule or monitor.",
            )
        check_role(
            self.dispatcher.registry, caller.controller, command
        )  # refused now, not at 08:00
        await self._room_for_one(caller.owner)
        spec = {"when": rule.text, "tz": tz, "command": params.command, **origin}
        due = rule.next_after(now)
        ident = await self.store.watch_add("schedule", caller.owner, spec, {}, due)
        self._plan(("schedule", caller.owner, ident), due)
        text = (
            f"schedule {ident} ({rule.text}, {tz}) runs: {params.command}. Next run:"
            f" {clock(due, tz)}. Each run is asked for as if you sent it then."
        )
        return {
            "id": ident,
            "when": rule.text,
            "tz": tz,
            "command": params.command,
            "next_run": due,
            "text": text,
        }

    async def _list(self, owner: str, kind: Kind) -> dict[str, Any]:
        rows = await self.store.watches(kind, owner)
        shown = [listed(row) for row in rows]
        lines = [line for row in rows for line in [summary(row)]]
        text = "\n".join(lines) if lines else f"You have no {kind}s."
        return {f"{kind}s": shown, "text": text}

    async def _act(self, owner: str, tool: str, ident: str) -> dict[str, Any]:
        kind: Kind = "monitor" if tool.startswith("monitor") else "schedule"
        verb = tool.split("_", 1)[1]
        key: Key = (kind, owner, ident)
        row = await self.store.watch(kind, owner, ident)
        if row is None:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS, f"You have no {kind} {ident} ({kind} list shows yours)."
            )
        if verb == "remove":
            await self.store.watch_remove(kind, owner, ident)
            self._plan(key, None)
            return {"id": ident, "removed": True, "text": f"{kind} {ident} removed."}
        if verb in ("pause", "resume"):
            row.state["paused"] = verb == "pause"
            if verb == "resume":
                row.due = (
                    time.time() if kind == "monitor" else self._rule(row).next_after(time.time())
                )
            await self.store.watch_save(row)
            self._plan(key, None if verb == "pause" else row.due)
            state = "paused" if verb == "pause" else f"resumed; next: {clock(row.due)}"
            return {"id": ident, "paused": verb == "pause", "text": f"{kind} {ident} {state}."}
        if kind == "monitor":  # check: now, and the reply is what it sees
            return {"id": ident, **await self._check(row)}
        self._spawn(self._run(row))
        return {"id": ident, "text": f"schedule {ident} runs now; its reply follows as a message."}

    # --- checks ------------------------------------------------------------------------

    async def _check(self, row: WatchRow) -> dict[str, Any]:
        """Check one monitor, say what is news, keep its state; what it saw (for ``check``)."""
        key: Key = (row.kind, row.owner, row.id)
        async with self._locks.setdefault(key, asyncio.Lock()):
            fresh = await self.store.watch(row.kind, row.owner, row.id)
            if fresh is None:
                return {"text": f"monitor {row.id} was removed."}
            row = fresh
            started = time.perf_counter()
            reading, failure = await self._read(row)
            took = (time.perf_counter() - started) * 1000
            news, diff = judge(
                row,
                None if reading is None else reading.text,
                failure,
                time.time(),
                notice_after=self.settings.failures_before_notice,
                fastest=self.settings.min_interval,
                worker=self.dispatcher.lanes.worker_name,
            )
            if not await self.store.watch_save(row):
                return {"text": f"monitor {row.id} was removed."}
            if not row.state.get("paused"):
                self._plan(key, row.due)
        log.info(
            "monitor %s of %s: %s in %.0f ms", row.id, row.owner[:12], row.state["outcome"], took
        )
        mode = row.spec["mode"]
        for event, head in news:
            await self._tell(row, event, head, diff if event == mode else "")
            if event == mode and reading is not None and reading.picture:
                await self._picture(row, reading.picture)
        shown = str(row.state["text"])[:1500] if reading is not None else ""  # as judged
        outcome = row.state["outcome"]
        text = f"monitor {row.id}: {row.spec['url']}: {outcome}" + (f"\n{shown}" if shown else "")
        return {"outcome": outcome, "seen": shown, "text": text}

    async def _read(self, row: WatchRow) -> tuple[Reading | None, str]:
        """The watched text (and picture), or why it could not be read: at most
        ``concurrency`` at once, each within the deadline."""
        spec = row.spec
        async with self._slots:
            try:
                reading = await asyncio.wait_for(
                    read_watched(
                        self.dispatcher.browser,
                        row.owner,
                        spec["url"],
                        spec.get("selector"),
                        bool(spec.get("screenshot")),
                    ),
                    self.timeout,
                )
            except TimeoutError:
                return None, f"the page did not load within {self.timeout:g} s"
            except BrowserdError as exc:
                return None, exc.message
            except PlaywrightError as exc:
                return None, first_line(exc)
        return reading, ""

    async def _tell(self, row: WatchRow, event: str, head: str, diff: str) -> None:
        await self.dispatcher.message(
            row.owner, news_message(row, event, head, diff), row.spec["scheme"]
        )

    async def _picture(self, row: WatchRow, picture: bytes) -> None:
        files = self.dispatcher.files_out
        reply_to = row.spec.get("reply_to")
        if files is None or not reply_to:
            return
        to = Address(row.owner, row.spec["scheme"], reply_to)
        shot = {"id": None, "success": True, "data": as_file(picture)}
        await files.attach(to, Request(tool="screenshot", text=True), shot)

    # --- runs --------------------------------------------------------------------------

    def _rule(self, row: WatchRow) -> Rule:
        return parse_when(row.spec["when"], row.spec["tz"])

    async def _run(self, row: WatchRow) -> None:
        """Run a schedule's command now as if its controller sent it, unless its last run
        still goes (then this one is skipped, and the next message says so)."""
        key: Key = (row.kind, row.owner, row.id)
        now = time.time()
        row.due = self._rule(row).next_after(now)
        skip = key in self._running
        skipped = 0
        if skip:
            row.state["skipped"] = int(row.state.get("skipped", 0)) + 1
        else:  # this run's message says how many were skipped before it
            skipped = int(row.state.pop("skipped", 0))
        if not await self.store.watch_save(row):
            return
        if not row.state.get("paused"):
            self._plan(key, row.due)
        if skip:
            return
        self._running.add(key)
        try:
            response = await self._command(row, skipped)
        finally:
            self._running.discard(key)
        done = await self.store.watch(row.kind, row.owner, row.id)  # skips counted meanwhile
        if done is not None:
            done.state["ran"] = time.time()
            done.state["outcome"] = "ok" if response.get("success") else response["error"]["code"]
            await self.store.watch_save(done)

    async def _command(self, row: WatchRow, skipped: int) -> Response:
        """The schedule's command through the dispatcher's one path; its response."""
        spec = row.spec
        header = f"schedule {row.id} ({spec['when']}):"
        note = (
            f"({skipped} run{'s' if skipped > 1 else ''} skipped: the run before was still going)\n"
            if skipped
            else ""
        )
        as_text = is_text(spec["command"])

        async def deliver(wire: str, request_id: Any) -> bool:
            if as_text:
                body = f"{header}\n{note}{wire}"
            else:
                body = json.dumps(
                    {
                        "schedule": row.id,
                        "when": spec["when"],
                        "skipped": skipped,
                        "reply": json.loads(wire),
                    },
                    ensure_ascii=False,
                )
            return await self.dispatcher.message(row.owner, body, spec["scheme"])

        files = self.dispatcher.files_out
        attach = None
        if files is not None and spec.get("reply_to"):
            attach = functools.partial(
                files.attach, Address(row.owner, spec["scheme"], spec["reply_to"])
            )
        answer = await self.dispatcher.scheduled(
            row.owner, spec["command"], deliver=deliver, attach=attach
        )
        return answer.response

    # --- status ------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """How many monitors and schedules there are, how many fail, and the next due."""
        monitors = await self.store.watches("monitor")
        schedules = await self.store.watches("schedule")
        notice = self.settings.failures_before_notice
        return {
            "monitors": len(monitors),
            "schedules": len(schedules),
            "failing": sum(int(r.state.get("failures", 0)) >= notice for r in monitors),
            "paused": sum(bool(r.state.get("paused")) for r in [*monitors, *schedules]),
            "next_due": min(self._due.values(), default=None),
        }
