"""Who may run what, in which order, and with whose consent: the routing between the rooms.

- One gate for every caller (``Dispatcher.admit``): the local owner, a controller, or an
  ``ask`` step on a controller's behalf (``admission.Caller``).  It checks the login state,
  where the tool may be asked from (login and API-key tools, the live view, only locally),
  the role (``"full"``, ``"read"``, or a tool list; a request judged by every tool it would
  run: a batch's commands, a find's action) and consent.
- Consent: a controller with an ``approver`` has each gated command held while the approver
  is asked by DM what would happen (``consent.describe_action``) under a short code
  (``approvals.Approvals``); it runs only on ``approve <code>`` from that key within the
  timeout.  ``deny``, the timeout or a shutdown answer the requester with ``DENIED``.
- One ``Lane`` per controller: its commands run one after another, in the order they
  arrived; different controllers run concurrently, each in its own browser session.  The
  queue is bounded: a flood gets ``UNAVAILABLE`` instead of memory.  A per-command timeout.
  While the controller's ``ask`` turn waits for them (a handoff), their commands run in a
  lane beside it, on the same path (held, fenced, saved), and the turn keeps its place.
- One path for every transport: ``Dispatcher.handle`` parses, admits, runs, encodes
  (``protocol.encode``, with the configured result cap), delivers and audits a command,
  whether it came by DM, on the local channel or over MCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..browser.pool import BrowserPool
from ..browser.session import Session
from ..browser.target import Element
from ..catalog import describe
from ..commands.protocol import Request, encode, is_text, parse_request, run
from ..commands.registry import Registry
from ..dm.messages import Incoming, ReplyAddress, Scheme, is_dm
from ..dm.pending import notice
from ..errors import BrowserdError, ErrorCode
from ..files.incoming import FileReceiver
from ..files.outgoing import FileSender
from ..nostr.nip19 import npub_encode
from ..redact import redact
from ..tools.schedule import WATCH_TOOLS
from .admission import (
    LOCAL_ONLY,
    TURN_TOOLS,
    Caller,
    Standing,
    check_place,
    check_role,
    may_list,
    role_catalog,
)
from .allow_list import AllowList
from .approvals import APPROVAL, Approvals
from .config import ControllerConfig
from .consent import commits, describe_action, needs_consent, target_of
from .lease_holder import LeaseHolder
from .store import Pending, Store, quietly

log = logging.getLogger(__name__)

STORE_RETRY = 1.0  # seconds between two asks of a store that did not answer

Reply = Callable[[ReplyAddress, str, Any], Awaitable[bool]]
Send = Callable[[str, str, Scheme], Awaitable[bool]]
LocalTools = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Waiting = Callable[[float], Awaitable[None]]
Response = dict[str, Any]
Deliver = Callable[[str, Any], Awaitable[bool]]
Attach = Callable[[Request, Response], Awaitable[Response]]
MakeWorker = Callable[["Dispatcher"], LeaseHolder]
MakeAsker = Callable[["Dispatcher"], "Asker"]


@dataclass(frozen=True)
class Answer:
    """A handled command: the response, its wire form (text or JSON, as it came), and the
    request when the message parsed."""

    response: Response
    wire: str
    request: Request | None = None


class Asker(Protocol):
    """Runs ``ask`` turns (daemon/ask.py); the dispatcher routes ask, ask --stop and resume
    (``admission.TURN_TOOLS``) to it."""

    async def run(self, owner: str, request: Request, controller: ControllerConfig) -> Response:
        """``owner``'s ask (a turn: status, answer and steps), ask --stop or resume."""
        ...

    def stop_all(self) -> None:
        """End every running turn (the daemon is stopping)."""
        ...

    def handing_over(self, owner: str) -> bool:
        """Whether ``owner``'s turn waits for them (their commands then run beside it)."""
        ...


class Watches(Protocol):
    """Runs the monitor and schedule tools (daemon/schedule)."""

    async def run(self, caller: Caller, request: Request) -> Response:
        """One of ``tools.schedule.WATCH_TOOLS`` for ``caller``, admitted already."""
        ...

    async def close(self) -> None:
        """Stop: no check or run starts any more, and those running end."""
        ...


def error_response(request_id: Any, error: BrowserdError) -> Response:
    """The protocol's failure shape."""
    return {"id": request_id, "success": False, "error": error.to_dict()}


@dataclass(frozen=True)
class Queued:
    """A controller's command in its queue, the tool it names (None when it does not
    parse), and the write that holds it in the store."""

    incoming: Incoming
    tool: str | None
    held: asyncio.Future[None]


@dataclass
class Lane:
    """One controller's place on this worker: its commands in arrival order, the task that
    runs them one after another, and the command running now (an ask's message is where
    its handoff screenshot goes)."""

    queue: asyncio.Queue[Queued | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    current: Queued | None = None
    # While this lane's ask turn waits for the person (a handoff): their commands' lane.
    aside: Lane | None = None

    @property
    def running(self) -> str | None:
        """The tool running now, for the status page."""
        return None if self.current is None else self.current.tool

    def idle(self) -> bool:
        """Nothing runs or waits here."""
        return self.current is None and self.queue.empty()

    def waiting(self) -> int:
        """How many commands wait here and, during a handoff, in the person's lane."""
        return self.queue.qsize() + (0 if self.aside is None else self.aside.waiting())


class Dispatcher:
    """Queues, policy, approvals, timeouts and the audit trail around the tool registry."""

    def __init__(
        self,
        *,
        registry: Registry,
        browser: BrowserPool,
        store: Store,
        reply: Reply,
        send: Send,
        controllers: AllowList,
        command_timeout: float,
        queue_size: int,
        local_tools: LocalTools | None = None,
        logged_in: Callable[[], bool] = lambda: True,
        worker_name: str = "",
        worker: MakeWorker | None = None,
        asker: MakeAsker | None = None,
    ) -> None:
        """``controllers``: the allow-list, shared (a reload changes it for everyone).
        ``logged_in`` says whether an identity is logged in now (the daemon's login);
        ``worker_name`` is whose approvals and held commands these are ([state] worker).
        ``worker`` and ``asker`` make the daemon's worker and ``ask`` around this
        dispatcher; without a worker (MCP --local, tests of the dispatcher alone) commands
        are held unfenced, and without an asker ``ask`` is ``UNAVAILABLE``."""
        self.registry, self.browser, self.store = registry, browser, store
        self.logged_in = logged_in
        self._reply, self._send = reply, send
        self.controllers = controllers
        self.command_timeout, self.queue_size = command_timeout, queue_size
        self._local_tools = local_tools
        self._lanes: dict[str, Lane] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # Every key that wrote, approvers too (which have no lane): how to write back.
        self._schemes: dict[str, Scheme] = {}
        self._closing = False
        self.approvals = Approvals(store, self._tell, worker_name)
        # Ask an approver, and wait (``Approvals.ask``): the name ask's callers know.
        self.consent = self.approvals.ask
        self.worker = None if worker is None else worker(self)
        self.asker = None if asker is None else asker(self)
        # Files in private chats (files/): sent with text replies, received for upload.
        self.files_out: FileSender | None = None
        self.files_in: FileReceiver | None = None
        # Monitors and schedules (daemon/schedule): the daemon's, set when it starts.
        self.watches: Watches | None = None

    # --- intake ------------------------------------------------------------------------

    def scheme_of(self, pubkey: str) -> Scheme:
        """The DM scheme this key last wrote in (NIP-17 until it has written)."""
        return self._schemes.get(pubkey, "nip17")

    @property
    def worker_name(self) -> str:
        """Whose approvals and held commands these are in the store ([state] worker)."""
        return self.approvals.worker_name

    def idle(self, controller: str) -> bool:
        """Nothing of ``controller``'s runs or waits here (it may move to another worker)."""
        lane = self._lanes.get(controller)
        return lane is None or lane.idle()

    def _lane(self, controller: str) -> Lane:
        """``controller``'s lane, made on its first command."""
        lane = self._lanes.get(controller)
        if lane is None:
            lane = self._lanes[controller] = Lane()
        return lane

    def _next_lane(self, controller: str) -> Lane:
        """Where ``controller``'s next command waits: its lane, or while its ask turn waits
        for them (a handoff), the lane beside it, made then, where their commands run one
        after another while the paused turn keeps its place."""
        lane = self._lane(controller)
        if self.asker is None or not self.asker.handing_over(controller):
            return lane
        if lane.aside is None:
            lane.aside = Lane()
        return lane.aside

    async def hand_back(self, controller: str) -> None:
        """The handoff is over: ``controller``'s next commands wait behind the turn again;
        returns when those sent during it are answered (the turn goes on after them)."""
        lane = self._lanes.get(controller)
        aside = None if lane is None else lane.aside
        if lane is None or aside is None:
            return
        lane.aside = None
        aside.queue.put_nowait(None)
        if aside.task is not None:
            await asyncio.gather(aside.task, return_exceptions=True)

    def submit(self, incoming: Incoming) -> None:
        """Take an authenticated message; never blocks the inbox.

        The key's DM scheme is recorded only for what is acted on: a stale kind 4 that is
        refused must not switch a NIP-17 controller's replies to NIP-04.
        """
        match = APPROVAL.match(incoming.content)
        if incoming.refusal is None and match:
            if incoming.sender in self.controllers.approvers() and is_dm(incoming.scheme):
                self._schemes[incoming.sender] = incoming.scheme
            self._spawn(self._decide(incoming, match[1].lower() == "approve", match[2].upper()))
            return
        asking = incoming.refusal is None and incoming.sender in self.controllers
        if asking and self.asker and controls_turn(self.registry, incoming.content):
            # ask --stop and resume act on the running turn: answered at once, not behind it.
            self._spawn(self._handle(incoming))
            return
        if incoming.refusal is not None or incoming.sender not in self.controllers:
            error = incoming.refusal or BrowserdError(
                ErrorCode.FORBIDDEN, "This key may only approve or deny held commands."
            )
            self._spawn(self._handle(incoming, error))
            return
        if self._closing:
            self._spawn(self._handle(incoming, _stopping()))
            return
        lane = self._next_lane(incoming.sender)
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(lane))
        queue = lane.queue
        if queue.qsize() >= self.queue_size:
            error = BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"{queue.qsize()} commands are already waiting; send this one again later.",
            )
            self._spawn(self._handle(incoming, error))
            return
        if is_dm(incoming.scheme):  # a ContextVM caller's pushed events still go by DM
            self._schemes[incoming.sender] = incoming.scheme
        request = None
        with contextlib.suppress(BrowserdError):
            request = parse_request(incoming.content, self.registry)
        # Held at once, in arrival order; the queue's worker waits for it before running.
        held = asyncio.ensure_future(self._hold(incoming, request))
        queue.put_nowait(Queued(incoming, request.tool if request else None, held))

    async def _hold(self, incoming: Incoming, request: Request | None) -> None:
        """Record the queued command, so a daemon killed before answering answers it later."""
        await self.store.hold(
            outer_id=incoming.outer_id,
            event_id=incoming.event_id,
            sender=incoming.sender,
            scheme=incoming.scheme,
            request_id=request.id if request else None,
            text=is_text(incoming.content),
            tool=request.tool if request else None,
            worker=self.worker_name,
        )

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _work(self, lane: Lane) -> None:
        """One lane's commands, in order: hold, fenced start, follow, handle (the lane's
        ``current`` meanwhile), keep the session, release.  A command whose hold could not
        be written (a full disk, a lost database) is answered with that error and not run:
        it could not be answered after a crash.  Whatever one raises past its own error
        handling (after its reply: the audit) is logged, and the queue goes on."""
        while (queued := await lane.queue.get()) is not None:
            incoming = queued.incoming
            try:
                try:
                    await queued.held
                except BrowserdError as exc:
                    await self._handle(incoming, exc)
                    continue
                if not await self._start(incoming):
                    continue  # another worker took the controller over, and answers it
                if self.worker is not None:  # it moved here: its pages first
                    await self.worker.follow(incoming.sender)
                lane.current = queued  # started: what the status page calls running
                try:
                    answer = await self._handle(incoming, fenced=self.worker is not None)
                finally:
                    lane.current = None
                if self.worker is not None:  # its pages always, its login if it may change
                    login = self._changes_state(answer.request)
                    await self.worker.keep_state(incoming.sender, login=login)
            except Exception:
                log.exception("a command from %s failed after running", incoming.sender[:12])
            await quietly(self.store.release(incoming.outer_id))

    async def _start(self, incoming: Incoming) -> bool:
        """Mark the held command running; with a worker, only if the command and the
        controller's lease are still this worker's (fencing: a worker that was paused past
        its lease must not run what another worker has taken over).  While the store cannot
        say, the command waits: run unconfirmed, it could run beside the worker that took the
        controller over, after that one answered it as not run."""
        if self.worker is None:
            await quietly(self.store.mark_running(incoming.outer_id))
            return True
        return await self._confirmed(lambda: self._may_start(incoming), incoming)

    async def _may_start(self, incoming: Incoming) -> bool:
        assert self.worker is not None
        if await self.store.start_held(incoming.outer_id, incoming.sender, self.worker.name):
            return True
        # The lease lapsed (a pause) and nobody took it: renew it, and look again.
        if await self.worker.renew(incoming.sender) and await self.store.start_held(
            incoming.outer_id, incoming.sender, self.worker.name
        ):
            return True
        if await self.store.answering(incoming.outer_id, self.worker.name):
            # Still ours, but the controller is another worker's now: say it was not run.
            moved = BrowserdError(
                ErrorCode.UNAVAILABLE,
                "This controller moved to another worker before this command ran; it was"
                " not run. Send it again.",
            )
            await self._handle(incoming, moved)
            await quietly(self.store.release(incoming.outer_id))
            return False
        log.warning("%s was taken over by another worker: not run here", incoming.event_id[:12])
        return False

    async def _confirmed(self, ask: Callable[[], Awaitable[bool]], incoming: Incoming) -> bool:
        """``ask()``'s answer from the store, asked again until the store gives one; False
        when the daemon stops first (the command's row stays: whoever serves its controller
        next answers it)."""
        while True:
            try:
                return await ask()
            except BrowserdError as exc:
                log.error("%s (%s waits for it)", exc.message, incoming.event_id[:12])
            if self._closing:
                return False
            await asyncio.sleep(STORE_RETRY)

    def _changes_state(self, request: Request | None) -> bool:
        """Whether the command may have changed the session's cookies or storage: any that
        is not ``read_only`` (the registry's policy field)."""
        if request is None or request.tool not in self.registry:
            return False
        return not self.registry.get(request.tool).read_only

    async def answer_unanswered(self) -> None:
        """At start: answer what this worker held when it was killed."""
        await self.answer_held(await self.store.unanswered(self.worker_name))

    async def answer_held(self, rows: list[Pending]) -> None:
        """Answer held commands that were never answered, as not run or as interrupted: at
        start (this worker's, from before it was killed), or on taking a controller over
        (another worker's).

        Nothing is run again (its ids stay claimed): a command that was running may have
        been partly done, and its sender is told so, to look before sending it again.
        """
        for held in rows:
            if held.running:
                error = BrowserdError(
                    ErrorCode.INTERRUPTED,
                    f"The daemon stopped while running this {held.tool or 'command'}: it may"
                    " have been partly done, and was not run again. Look (snapshot, get url)"
                    " before you send it again.",
                )
            else:
                error = BrowserdError(
                    ErrorCode.UNAVAILABLE,
                    "The daemon stopped before running this command; it was not run. Send it"
                    " again.",
                )
            response = error_response(held.request_id, error)
            wire = self.encode(response, held.text)
            delivered = await self._deliver(held, wire, held.request_id)
            request = Request(id=held.request_id, tool=held.tool) if held.tool else None
            await self._audit(
                held.sender, held.scheme, request, response, time.perf_counter(), delivered
            )
            if delivered:
                await quietly(self.store.release(held.outer_id))

    # --- one command, from any transport ------------------------------------------------

    async def handle(
        self,
        owner: str,
        raw: str | dict[str, Any],
        *,
        transport: str,
        local: bool = False,
        deliver: Deliver | None = None,
        refusal: BrowserdError | None = None,
        fence: Callable[[], Awaitable[bool]] | None = None,
        attach: Attach | None = None,
    ) -> Answer:
        """Parse, police, run, encode, deliver and audit one command: every transport's path.

        ``local`` is this machine's standing (the local channel, MCP ``--local``): full role,
        no approval, the local-only tools; otherwise ``owner`` must be an allow-listed
        controller.  With a ``refusal`` nothing runs: the sender gets that error, with its
        request's id when the message parses.  ``deliver`` sends a message to the sender (a
        DM) and says whether it went out: the reply, and before it any notice that the
        command waits for its approver; without it the caller sends ``Answer.wire`` itself.
        ``fence()`` is asked before the reply goes out: False means another worker took the
        command over and answered it, so this reply stays unsent.  ``attach(request,
        response)`` sends a text reply's file first (a chat's file message), or puts a JSON
        request's file on Blossom when it asked for a link, and gives the response the reply
        then shows.
        """
        started = time.perf_counter()
        request: Request | None = None
        as_text = is_text(raw)
        try:
            request = parse_request(raw, self.registry)
            if refusal is not None:
                raise refusal
            response = await self._serve(owner, request, local, as_text, deliver)
        except BrowserdError as exc:
            response = error_response(request.id if request else None, refusal or exc)
        except Exception:
            log.exception("command from %s failed unexpectedly", owner[:12])
            internal = BrowserdError(ErrorCode.INTERNAL, "Internal error; the daemon logged it.")
            response = error_response(request.id if request else None, refusal or internal)
        if fence is not None and not await fence():
            log.warning("the reply to %s stays unsent: another worker answered it", owner[:12])
            return Answer(response, self.encode(response, as_text), request)
        if attach is not None and request is not None and (as_text or request.files == "link"):
            response = await attach(request, response)
        wire = self.encode(response, as_text)
        delivered = True if deliver is None else await deliver(wire, response.get("id"))
        await self._audit(owner, transport, request, response, started, delivered)
        return Answer(response, wire, request)

    def encode(self, response: Response, as_text: bool) -> str:
        """``protocol.encode`` with the configured result cap."""
        return encode(response, as_text, self.browser.config.result_cap)

    async def _serve(
        self, owner: str, request: Request, local: bool, as_text: bool, deliver: Deliver | None
    ) -> Response:
        if local:
            return await self._execute(Caller.local(owner), request)
        controller = self.controllers.get(owner)
        if controller is None:  # removed by a reload while queued
            raise BrowserdError(ErrorCode.FORBIDDEN, "This key is no longer allowed.")

        async def waiting(seconds: float) -> None:
            if deliver is not None:
                await deliver(notice(request.id, request.tool, seconds, as_text), request.id)

        return await self._execute(Caller.of(owner, controller), request, waiting)

    async def _handle(
        self, incoming: Incoming, refusal: BrowserdError | None = None, fenced: bool = False
    ) -> Answer:
        """One DM: its reply goes back by DM, in the scheme it came in.  ``fenced``: it is a
        held command, answered only while its row is still this worker's."""
        if incoming.file_tags is not None and refusal is None:
            return await self._receive_file(incoming)

        async def deliver(wire: str, request_id: Any) -> bool:
            return await self._deliver(incoming, wire, request_id)

        async def fence() -> bool:  # no reply unless the store says the command is ours
            return await self._confirmed(
                lambda: self.store.answering(incoming.outer_id, self.worker_name), incoming
            )

        files = self.files_out
        return await self.handle(
            incoming.sender,
            incoming.content,
            transport=incoming.scheme,
            deliver=deliver,
            refusal=refusal,
            fence=fence if fenced else None,
            attach=functools.partial(files.attach, incoming) if files is not None else None,
        )

    async def _receive_file(self, incoming: Incoming) -> Answer:
        """A file message from a controller whose role may upload: kept for ``upload``."""
        started = time.perf_counter()
        request = Request(tool="file", params={"url": incoming.content})
        controller = self.controllers.get(incoming.sender)
        try:
            if self.files_in is None:
                raise BrowserdError(ErrorCode.UNAVAILABLE, "This daemon keeps no files.")
            if controller is None or not may_list(self.registry, controller.role, "upload"):
                raise BrowserdError(
                    ErrorCode.FORBIDDEN, "Files are kept only for a controller that may upload."
                )
            tags = [list(tag) for tag in incoming.file_tags or ()]
            data = await self.files_in.receive(incoming.sender, incoming.content, tags)
            response: Response = {"id": None, "success": True, "data": data}
        except BrowserdError as exc:
            response = error_response(None, exc)
        except Exception:
            log.exception("a file from %s could not be kept", incoming.sender[:12])
            internal = BrowserdError(ErrorCode.INTERNAL, "Internal error; the daemon logged it.")
            response = error_response(None, internal)
        wire = self.encode(response, True)
        delivered = await self._deliver(incoming, wire, None)
        await self._audit(incoming.sender, incoming.scheme, request, response, started, delivered)
        return Answer(response, wire)

    async def _deliver(self, to: ReplyAddress, text: str, request_id: Any) -> bool:
        """A reply to the message ``to`` names, in its scheme; whether it went out."""
        try:
            return await self._reply(to, text, request_id)
        except Exception:
            log.exception("could not send the reply to %s", to.sender[:12])
            return False

    async def _audit(
        self,
        controller: str,
        transport: str,
        request: Request | None,
        response: Response,
        started: float,
        delivered: bool = True,
    ) -> None:
        duration = (time.perf_counter() - started) * 1000
        outcome = "ok" if response.get("success") else response["error"]["code"]
        if not delivered:
            outcome += " (reply not delivered)"
        tool = request.tool if request else None
        params = request.params if request else None
        await quietly(
            self.store.audit(
                controller=controller,
                transport=transport,
                request_id=None if request is None else str(request.id),
                tool=tool,
                params=params,
                outcome=outcome,
                duration_ms=round(duration, 3),
            )
        )
        log.info(
            "%s from %s via %s: %s %s -> %s in %.1f ms",
            "command" if request is None else f"command {request.id}",
            controller[:12],
            transport,
            tool,
            _shortened(json.dumps(redact(params), default=str)),
            outcome,
            duration,
        )

    # --- the local control channel ----------------------------------------------------

    async def handle_local(self, owner: str, raw: str) -> str:
        """One request from the loopback WebSocket: full role, no approval, login tools too."""
        return (await self.handle(owner, raw, transport="local", local=True)).wire

    # --- running -----------------------------------------------------------------------

    async def execute(
        self,
        owner: str,
        request: Request,
        controller: ControllerConfig | None,
        waiting: Waiting | None = None,
    ) -> Response:
        """Run ``request`` for ``owner`` under ``controller``'s role (None: the local owner).

        ``waiting(seconds)`` is told when the command is held for its approver.
        """
        caller = Caller.local(owner) if controller is None else Caller.of(owner, controller)
        return await self._execute(caller, request, waiting)

    async def admit(
        self, caller: Caller, request: Request, waiting: Waiting | None = None
    ) -> Element | None:
        """Whether ``caller`` may run ``request`` now; raises the reason when not.

        The one gate for every caller (``admission``): login state, where the tool may be
        asked from, the role, and consent, for which a gated command (and an ask step that
        can send data out) is held here until its approver answers.  Returns the element
        consent was judged on (an ask step names it in its transcript), when one was read.
        """
        check_place(self.registry, caller, request, self.logged_in())
        if caller.controller is None:
            return None  # the local owner: full role, no approval
        if caller.standing is Standing.CONTROLLER and request.tool == "help":
            return None  # every role may ask what it may run
        check_role(self.registry, caller.controller, request)
        if request.tool == "ask":
            return None  # each of its steps is admitted in turn
        return await self._consent_for(caller, request, waiting)

    async def _consent_for(
        self, caller: Caller, request: Request, waiting: Waiting | None
    ) -> Element | None:
        """Hold the request for its approver when consent is needed (``consent.needs_consent``
        for an ask step: a commit always asks); the element it was judged on."""
        assert caller.controller is not None
        approver = caller.approver()
        gated = self.registry.is_gated(request.tool, request.params)
        element = None
        if caller.standing is Standing.CONTROLLER:
            if approver is None or not gated:
                return None
            session = await self.browser.session(caller.owner)
            what = await describe_action(self.registry, session, request)
        else:
            sends = self.registry.sends(request.tool, request.params)
            through = self.registry.get(request.tool).delegates is not None
            # Read only where consent turns on it: reading costs a full snapshot of the page.
            judged = gated and not through
            session = await self.browser.session(caller.owner)
            element = await target_of(session, request.tool, request.params) if judged else None
            commit = judged and commits(request.tool, request.params, element)
            auto = caller.controller.ask.auto_approve
            if not needs_consent(request.tool, gated or sends, through, commit, auto):
                return element
            what = await describe_action(self.registry, session, request, element)
            what += f". Why: {caller.reason}" if caller.reason else ""
        assert approver is not None
        await self.consent(caller.controller, approver, request.tool, caller.who(), what, waiting)
        recorder = session.stream.recorder
        if recorder is not None:  # a recording shows who approved what, and when
            await recorder.begin(f"approved by {npub_encode(approver)[:16]}…: {what}")
        return element

    async def _execute(
        self, caller: Caller, request: Request, waiting: Waiting | None = None
    ) -> Response:
        """Admit, then run where the tool runs: the daemon's own tools, ask, help, a session."""
        await self.admit(caller, request, waiting)
        if caller.is_local and request.tool in LOCAL_ONLY:
            if self._local_tools is None:
                self.registry.get(request.tool)  # UNKNOWN_TOOL: no daemon here (MCP --local)
            else:
                data = await self._local_tools(request.tool, request.params or {})
                return {"id": request.id, "success": True, "data": data}
        if caller.standing is Standing.CONTROLLER and request.tool in TURN_TOOLS:
            assert caller.controller is not None
            if self.asker is None:
                raise BrowserdError(ErrorCode.UNAVAILABLE, "ask is not set up in this daemon.")
            return await self.asker.run(caller.owner, request, caller.controller)
        if request.tool in WATCH_TOOLS:
            if self.watches is None:
                raise BrowserdError(ErrorCode.UNAVAILABLE, "This daemon runs no monitors.")
            return await self.watches.run(caller, request)
        if caller.controller is not None and request.tool == "help":  # every role may ask
            _, asked = self.registry.validate("help", request.params)
            name = getattr(asked, "tool", None)
            catalog = role_catalog(self.registry, caller.controller)
            data = describe(self.registry, name) if name else catalog
            return {"id": request.id, "success": True, "data": data}
        return await self._run(await self.browser.session(caller.owner), request)

    async def _run(self, session: Session, request: Request) -> Response:
        try:
            return await asyncio.wait_for(
                run(self.registry, session, request), self.command_timeout
            )
        except TimeoutError:
            raise BrowserdError(
                ErrorCode.TIMEOUT,
                f"{request.tool} did not finish within {self.command_timeout:g} s and was stopped.",
            ) from None

    # --- ask: a model loop whose steps come back here -----------------------------------

    async def agent_step(
        self, owner: str, controller: ControllerConfig, request: Request, reason: str
    ) -> tuple[Response, str]:
        """One tool call of ``owner``'s ask turn, under the controller's role and consent.

        Returns the response and the target as the person would name it (a gated call's;
        the loop names a free one's by its ref or selector).  A gated call, and one that can
        send data out (``sends``: scrape, open, eval…, free or not), waits for the controller
        (or its approver) unless auto_approve names the tool, and a commit (consent.commits:
        judged on the element itself) always waits; a refusal raises ``DENIED``.
        """
        started = time.perf_counter()
        response: Response | None = None
        try:
            element = await self.admit(Caller.ask_step(owner, controller, reason), request)
            target = "" if element is None else element.describe()
            response = await self._run(await self.browser.session(owner), request)
            return response, target
        except BrowserdError as exc:
            response = error_response(None, exc)
            raise
        finally:
            if response is not None:
                await self._audit(owner, "ask", request, response, started)

    async def show_screen(self, owner: str) -> str:
        """An annotated screenshot of ``owner``'s page, sent as a file message answering the
        command running now (their ask); the line naming it, empty when none was sent."""
        running = self._lane(owner).current
        if self.files_out is None or running is None:
            return ""
        request = Request(tool="screenshot_annotated")
        shot = await self._run(await self.browser.session(owner), request)
        shown = await self.files_out.attach(running.incoming, request, shot)
        return str(shown.get("data", {}).get("file") or "")

    async def page_now(self, owner: str) -> Response:
        """``owner``'s page as it is (a snapshot), for a turn the person hands back."""
        return await self._run(await self.browser.session(owner), Request(tool="snapshot"))

    def current_message(self, owner: str) -> Incoming | None:
        """The message of ``owner``'s command running now (None: none runs from a message)."""
        lane = self._lanes.get(owner)
        return None if lane is None or lane.current is None else lane.current.incoming

    async def message(self, recipient: str, text: str, scheme: Scheme) -> bool:
        """A message of the daemon's own to ``recipient`` in ``scheme`` (a monitor's news)."""
        try:
            return await self._send(recipient, text, scheme)
        except Exception:
            log.exception("could not send a message to %s", recipient[:12])
            return False

    def in_chat(self, owner: str) -> bool:
        """Whether ``owner``'s command running now came by direct message: a chat, where a
        handoff's message reaches a person who can answer it with ``resume``."""
        running = self._lane(owner).current
        return running is not None and is_dm(running.incoming.scheme)

    async def notify(self, recipient: str, text: str) -> bool:
        """A message to a controller outside any reply (ask's progress), in its scheme."""
        try:
            return await self._tell(recipient, text)
        except Exception:
            log.exception("could not send a message to %s", recipient[:12])
            return False

    # --- consent -----------------------------------------------------------------------

    async def _decide(self, incoming: Incoming, approve: bool, code: str) -> None:
        """An ``approve``/``deny`` from a known key, answered in its own scheme."""
        guesser = self.controllers.get(incoming.sender)
        answer = await self.approvals.decide(incoming.sender, approve, code, guesser)
        await self._deliver(incoming, answer, None)

    async def _tell(self, recipient: str, text: str) -> bool:
        """A DM of ours (an approval prompt) to ``recipient``, in its scheme."""
        return await self._send(recipient, text, self.scheme_of(recipient))

    # --- lifecycle ---------------------------------------------------------------------

    async def close(self) -> None:
        """Finish each running and queued command and its reply (a drain: what was claimed
        here is answered here); deny the commands held for their approver."""
        self._closing = True
        if self.watches is not None:
            await self.watches.close()
        if self.asker is not None:
            self.asker.stop_all()
        self.approvals.deny_all()
        working = [lane.task for lane in self._lanes.values() if lane.task is not None]
        for lane in self._lanes.values():
            lane.queue.put_nowait(None)
        await asyncio.gather(*working, return_exceptions=True)
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def status(self) -> dict[str, Any]:
        """Running commands and queue depths, for the status page (the approvals waiting on
        every worker come from the store)."""
        return {
            "running": {pk: lane.running for pk, lane in self._lanes.items() if lane.running},
            "queued": {pk: n for pk, lane in self._lanes.items() if (n := lane.waiting())},
        }


def _shortened(text: str, limit: int = 200) -> str:
    """A log line's params: long ones are cut, and say so."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _stopping() -> BrowserdError:
    return BrowserdError(ErrorCode.UNAVAILABLE, "The daemon is stopping; send this again later.")


def controls_turn(registry: Registry, content: str) -> bool:
    """Whether ``content`` is ``ask --stop`` or ``resume`` (text or JSON, ``Resume`` as a
    phone capitalises it too)."""
    lowered = content.lower()
    if "stop" not in lowered and "resume" not in lowered:
        return False
    try:
        request = parse_request(content, registry)
    except BrowserdError:
        return False
    stop = request.tool == "ask" and request.params.get("stop") is True
    return stop or request.tool == "resume"
