"""The dispatcher: every caller's request through the same four stages, in this order.

1. **Lanes** (``lanes.py``): a controller's DMs in arrival order, held in the store until
   answered, fenced between workers, answered after a crash.
2. **Admission** (``admission.py``): the one gate, for every caller: login state, where the
   tool may be asked from, the role, and consent (held for the approver).
3. **Running** (``running.py``): where the request runs (a session, nearly always), within
   the command deadline; stopped means stopped.
4. **Delivery** (``delivery.py``): the wire form, the reply in the sender's scheme, the audit.

``Dispatcher`` composes them and holds no policy of its own; each caller goes through them
in one line: a DM (``submit``: a lane, then ``handle``), the local channel (``handle_local``),
ContextVM (``submit``, through its server), an ``ask`` step (``agent_step``), a scheduled
command (``scheduled``: its controller's lane, then ``handle``), and a
caller with a request in hand and no message to answer (``perform``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..browser.pool import BrowserPool
from ..commands.protocol import Request, is_text, parse_request
from ..commands.registry import Registry
from ..dm.messages import Incoming, Scheme, is_dm
from ..dm.pending import notice
from ..errors import BrowserdError, ErrorCode
from ..files.outgoing import FileSender
from .admission import Admission, Caller, Waiting
from .allow_list import AllowList
from .approvals import APPROVAL, Approvals
from .config import ControllerConfig
from .delivery import Answer, Delivery, Reply, Response, Send, error_response
from .lanes import Lanes
from .lease_holder import LeaseHolder
from .running import Asker, LocalTools, Running
from .store import Store

log = logging.getLogger(__name__)

Deliver = Callable[[str, Any], Awaitable[bool]]
Attach = Callable[[Request, Response], Awaitable[Response]]
MakeWorker = Callable[["Dispatcher"], LeaseHolder]
MakeAsker = Callable[["Dispatcher"], Asker]


class Dispatcher:
    """Lanes → admission → running → delivery, composed for every caller."""

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
        self.controllers = controllers
        self.delivery = Delivery(store, reply, send, browser.config.result_cap)
        self.approvals = Approvals(store, self.delivery.tell, worker_name)
        self.admission = Admission(registry, browser, controllers, self.approvals, logged_in)
        self.running = Running(registry, browser, command_timeout, local_tools)
        self.lanes = Lanes(
            store,
            self.delivery,
            self._handle,
            queue_size=queue_size,
            worker_name=worker_name,
            registry=registry,
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self.worker = self.lanes.worker = None if worker is None else worker(self)
        self.asker = self.running.asker = None if asker is None else asker(self)
        if self.asker is not None:
            self.lanes.handing_over = self.asker.handing_over
        # Files in private chats (files/): sent with text replies (received: ``running``).
        self.files_out: FileSender | None = None

    # --- the callers' entrances ----------------------------------------------------------

    def submit(self, incoming: Incoming) -> None:
        """Take an authenticated message (a DM, or a ContextVM call); never blocks the inbox.

        The key's DM scheme is recorded only for what is acted on: a stale kind 4 that is
        refused must not switch a NIP-17 controller's replies to NIP-04.
        """
        match = APPROVAL.match(incoming.content)
        if incoming.refusal is None and match:
            if incoming.sender in self.controllers.approvers() and is_dm(incoming.scheme):
                self.delivery.wrote_in(incoming.sender, incoming.scheme)
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
        if self.lanes.closing:
            self._spawn(self._handle(incoming, _stopping()))
            return
        request = None
        with contextlib.suppress(BrowserdError):
            request = parse_request(incoming.content, self.registry)
        full = self.lanes.enqueue(incoming, request)
        if full is not None:
            self._spawn(self._handle(incoming, full))
        elif is_dm(incoming.scheme):  # a ContextVM caller's pushed events still go by DM
            self.delivery.wrote_in(incoming.sender, incoming.scheme)

    async def handle_local(self, owner: str, raw: str) -> str:
        """One request from the loopback WebSocket: full role, no approval, login tools too."""
        return (await self.handle(owner, raw, transport="local", local=True)).wire

    async def scheduled(
        self, owner: str, raw: str | dict[str, Any], *, deliver: Deliver, attach: Attach | None
    ) -> Answer:
        """A scheduled command, as if ``owner`` sent it now: in their lane, after what they
        sent before it (never beside their own commands), then ``handle``'s path, audited
        under ``schedule``; its reply is a message (``deliver``)."""
        request = None
        with contextlib.suppress(BrowserdError):
            request = parse_request(raw, self.registry)

        async def work(refusal: BrowserdError | None) -> Answer:
            return await self.handle(
                owner, raw, transport="schedule", deliver=deliver, refusal=refusal, attach=attach
            )

        return await self.lanes.run(owner, request.tool if request else None, work)

    async def perform(
        self,
        caller: Caller,
        request: Request,
        *,
        transport: str,
        deliver: Deliver | None = None,
        as_text: bool = True,
    ) -> Answer:
        """The entrance for a caller with a parsed request in hand and no message to
        answer (a background check built in code, say: ``Caller.of(owner, controller)``);
        one that holds a wire request, as a schedule does, calls ``scheduled``.

        The same stages as a DM's, but its lane: admitted (a gated request waits for its
        approver), run on the owner's session (whose lock orders it with the controller's
        own commands) within the deadline, encoded, handed to ``deliver(wire, id)`` (for
        instance ``lambda wire, _: dispatcher.notify(owner, wire)``: a message, not a
        reply) and audited under ``transport``.  Never raises: an error is the response.
        """
        started = time.perf_counter()
        try:
            response = await self._admitted_run(caller, request)
        except BrowserdError as exc:
            response = error_response(request.id, exc)
        return await self._deliver(
            caller.owner, transport, request, response, started, deliver, as_text
        )

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
        """Parse, admit, run, encode, deliver and audit one message: every transport's path.

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
            caller, waiting = self._caller(owner, request, local, as_text, deliver)
            response = await self._admitted_run(caller, request, waiting)
        except BrowserdError as exc:
            response = error_response(request.id if request else None, refusal or exc)
        except Exception:
            log.exception("command from %s failed unexpectedly", owner[:12])
            internal = BrowserdError(ErrorCode.INTERNAL, "Internal error; the daemon logged it.")
            response = error_response(request.id if request else None, refusal or internal)
        if fence is not None and not await fence():
            log.warning("the reply to %s stays unsent: another worker answered it", owner[:12])
            return Answer(response, self.delivery.encode(response, as_text), request)
        if attach is not None and request is not None and (as_text or request.files == "link"):
            response = await attach(request, response)
        return await self._deliver(owner, transport, request, response, started, deliver, as_text)

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
            element = await self.admission.admit(
                Caller.ask_step(owner, controller, reason), request
            )
            target = "" if element is None else element.describe()
            response = await self.running.on_session(owner, request)
            return response, target
        except BrowserdError as exc:
            response = error_response(None, exc)
            raise
        finally:
            if response is not None:
                await self.delivery.audit(owner, "ask", request, response, started)

    # --- the pipeline --------------------------------------------------------------------

    async def _admitted_run(
        self, caller: Caller, request: Request, waiting: Waiting | None = None
    ) -> Response:
        """Admission, then running: the middle of every caller's path."""
        await self.admission.admit(caller, request, waiting)
        return await self.running.run(caller, request)

    def _caller(
        self, owner: str, request: Request, local: bool, as_text: bool, deliver: Deliver | None
    ) -> tuple[Caller, Waiting | None]:
        """Who sent a message, and how they hear that it waits for its approver."""
        if local:
            return Caller.local(owner), None
        controller = self.controllers.get(owner)
        if controller is None:  # removed by a reload while queued
            raise BrowserdError(ErrorCode.FORBIDDEN, "This key is no longer allowed.")

        async def waiting(seconds: float) -> None:
            if deliver is not None:
                await deliver(notice(request.id, request.tool, seconds, as_text), request.id)

        return Caller.of(owner, controller), waiting

    async def _deliver(
        self,
        owner: str,
        transport: str,
        request: Request | None,
        response: Response,
        started: float,
        deliver: Deliver | None,
        as_text: bool,
    ) -> Answer:
        """Delivery: encoded, sent (when there is a way back), audited."""
        wire = self.delivery.encode(response, as_text)
        delivered = True if deliver is None else await deliver(wire, response.get("id"))
        await self.delivery.audit(owner, transport, request, response, started, delivered)
        return Answer(response, wire, request)

    async def _handle(
        self, incoming: Incoming, refusal: BrowserdError | None = None, fenced: bool = False
    ) -> Answer:
        """One DM: its reply goes back by DM, in the scheme it came in.  ``fenced``: it is a
        held command, answered only while its row is still this worker's."""
        if incoming.file_tags is not None and refusal is None:
            return await self._receive_file(incoming)

        async def deliver(wire: str, request_id: Any) -> bool:
            return await self.delivery.deliver(incoming, wire, request_id)

        files = self.files_out
        return await self.handle(
            incoming.sender,
            incoming.content,
            transport=incoming.scheme,
            deliver=deliver,
            refusal=refusal,
            fence=functools.partial(self.lanes.still_ours, incoming) if fenced else None,
            attach=functools.partial(files.attach, incoming) if files is not None else None,
        )

    async def _receive_file(self, incoming: Incoming) -> Answer:
        """A file message: kept for ``upload`` when the controller's role may upload."""
        started = time.perf_counter()
        request = Request(tool="file", params={"url": incoming.content})
        try:
            self.admission.check_files_in(incoming.sender)
            tags = [list(tag) for tag in incoming.file_tags or ()]
            response = await self.running.receive(incoming.sender, incoming.content, tags)
        except BrowserdError as exc:
            response = error_response(None, exc)
        except Exception:
            log.exception("a file from %s could not be kept", incoming.sender[:12])
            internal = BrowserdError(ErrorCode.INTERNAL, "Internal error; the daemon logged it.")
            response = error_response(None, internal)

        async def deliver(wire: str, request_id: Any) -> bool:
            return await self.delivery.deliver(incoming, wire, request_id)

        return await self._deliver(
            incoming.sender, incoming.scheme, request, response, started, deliver, True
        )

    async def _decide(self, incoming: Incoming, approve: bool, code: str) -> None:
        """An ``approve``/``deny`` from a known key, answered in its own scheme."""
        answer = await self.admission.decide(incoming.sender, approve, code)
        await self.delivery.deliver(incoming, answer, None)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- what ask's turns and the worker ask of it ---------------------------------------

    async def hand_back(self, controller: str) -> None:
        """The handoff is over (``Lanes.hand_back``)."""
        await self.lanes.hand_back(controller)

    async def show_screen(self, owner: str) -> str:
        """An annotated screenshot of ``owner``'s page, sent as a file message answering the
        command running now (their ask); the line naming it, empty when none was sent."""
        running = self.lanes.current(owner)
        if self.files_out is None or running is None:
            return ""
        request = Request(tool="screenshot_annotated")
        shot = await self.running.on_session(owner, request)
        shown = await self.files_out.attach(running.incoming, request, shot)
        return str(shown.get("data", {}).get("file") or "")

    async def page_now(self, owner: str) -> Response:
        """``owner``'s page as it is (a snapshot), for a turn the person hands back."""
        return await self.running.on_session(owner, Request(tool="snapshot"))

    def current_message(self, owner: str) -> Incoming | None:
        """The message of ``owner``'s command running now (None: none runs from a message)."""
        running = self.lanes.current(owner)
        return None if running is None else running.incoming

    async def message(self, recipient: str, text: str, scheme: Scheme) -> bool:
        """A message of the daemon's own to ``recipient`` in ``scheme`` (a monitor's news)."""
        return await self.delivery.message(recipient, text, scheme)

    def in_chat(self, owner: str) -> bool:
        """Whether ``owner``'s command running now came by direct message: a chat, where a
        handoff's message reaches a person who can answer it with ``resume``."""
        running = self.lanes.current(owner)
        return running is not None and is_dm(running.incoming.scheme)

    async def notify(self, recipient: str, text: str) -> bool:
        """A message to a controller outside any reply (ask's progress), in its scheme."""
        return await self.delivery.notify(recipient, text)

    # --- lifecycle -----------------------------------------------------------------------

    async def close(self) -> None:
        """Finish each running and queued command and its reply (a drain: what was claimed
        here is answered here); deny the commands held for their approver."""
        self.lanes.closing = True
        if self.running.watches is not None:
            await self.running.watches.close()
        if self.asker is not None:
            self.asker.stop_all()
        self.approvals.deny_all()
        await self.lanes.close()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def status(self) -> dict[str, Any]:
        """Running commands and queue depths, for the status page (the approvals waiting on
        every worker come from the store)."""
        return self.lanes.status()


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
