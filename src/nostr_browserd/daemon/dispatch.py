"""Who may run what, in which order, and with whose consent.

- A role per controller: ``"full"``; ``"read"`` (free tools only: nothing that changes a
  page); or an explicit list of tool names.
- One queue per controller: a controller's commands run one after another, in the order they
  arrived; different controllers run concurrently, each in its own browser session.  The queue
  is bounded: a flood gets ``UNAVAILABLE`` instead of memory.
- A per-command timeout.  A request is judged, for the role and for consent, by every tool
  it would run (``Registry.is_gated``, ``Registry.tools_run_by``): a batch's commands, a
  find's action.
- Consent: a controller with an ``approver`` has each gated command held while the approver
  is asked, by DM, what would happen (tool, target element's role and name, page URL:
  ``consent.describe_action``) with a short code; it runs only on ``approve <code>`` from
  that key within the timeout.  ``deny``, the timeout or a shutdown answer the requester
  with ``DENIED``.
- Login and API-key tools never run here: they belong to the local control channel.
- Logged out means logged out: while no identity is logged in, every tool but the login
  tools (``LOGIN_TOOLS``) answers ``NOT_LOGGED_IN``, whichever transport carried it.
- One path for every transport: ``Dispatcher.handle`` parses, polices, runs, encodes
  (``protocol.encode``, with the configured result cap), delivers and audits a command,
  whether it came by DM, on the local channel or over MCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..browser.pool import BrowserPool
from ..browser.session import Session
from ..catalog import describe
from ..commands.protocol import Request, encode, is_text, parse_request, run
from ..commands.registry import Registry
from ..dm.messages import Incoming, Scheme
from ..dm.pending import notice
from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import npub_encode
from ..redact import redact
from .config import ControllerConfig, Role
from .consent import approval_messages, commits, describe_action, needs_consent, target_of
from .lease_holder import LeaseHolder
from .store import Pending, Store

log = logging.getLogger(__name__)

LOGIN_TOOLS = frozenset({"login_status", "login", "logout", "switch_identity"})
KEY_TOOLS = frozenset({"keys_set", "keys_status", "keys_clear"})
LOCAL_ONLY = LOGIN_TOOLS | KEY_TOOLS
NO_STREAM_BY_MESSAGE = (
    "{} works only on the local control channel (the live view): a relay is no video "
    "channel. Over messages, follow along with watch and screenshot."
)
NOT_LOGGED_IN_MESSAGE = (
    "Not logged in: until an identity is, only login_status, login, logout and switch_identity"
    ' run. Log in on the local channel with login (e.g. {"tool": "login", "params": {"method":'
    ' "local", "nsec_file": "/path/to/key.nsec"}}), or set [identity] in the config file and'
    " restart."
)
APPROVAL = re.compile(r"^\s*(approve|deny)\s+([A-Za-z0-9]{4,12})\s*$", re.I)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
# The prompt's delivery may take this long before the approver's time starts: a killed
# worker's approval is forgotten by the others only after both.
APPROVAL_DELIVERY = 60.0

Reply = Callable[[Incoming, str, Any], Awaitable[bool]]
Send = Callable[[str, str, Scheme], Awaitable[bool]]
LocalTools = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Waiting = Callable[[float], Awaitable[None]]
Response = dict[str, Any]
Deliver = Callable[[str, Any], Awaitable[bool]]


@dataclass(frozen=True)
class Answer:
    """A handled command: the response, its wire form (text or JSON, as it came), and the
    request when the message parsed."""

    response: Response
    wire: str
    request: Request | None = None


class Asker(Protocol):
    """Runs ``ask`` turns (daemon/ask.py); the dispatcher routes ask and ask --stop to it."""

    async def run(self, owner: str, request: Request, controller: ControllerConfig) -> Response:
        """One turn for ``owner``; the response carries status, answer and steps."""
        ...

    def stop(self, owner: str) -> bool:
        """End ``owner``'s running turn; False when none runs."""
        ...

    def stop_all(self) -> None:
        """End every running turn (the daemon is stopping)."""
        ...


def error_response(request_id: Any, error: BrowserdError) -> Response:
    """The protocol's failure shape."""
    return {"id": request_id, "success": False, "error": error.to_dict()}


def permits(registry: Registry, role: Role, tool: str, params: dict[str, Any]) -> bool:
    """Whether ``role`` may run ``tool`` with ``params``: full, read, or an explicit list.

    The registry judges a request by every tool it would run (a batch's commands, a find's
    action), so neither can smuggle a gated tool past a "read" role or a tool list.  A "read"
    role never runs what ``spends`` the owner's model keys (``ask``): a list must name it.
    """
    if role == "full":
        return True
    if role == "read":
        return not registry.is_gated(tool, params) and not registry.get(tool).spends
    return all(name in role for name in registry.tools_run_by(tool, params))


def may_list(registry: Registry, role: Role, tool: str) -> bool:
    """Whether ``role`` may run ``tool`` with some params: what its catalog shows.

    A batch is judged by what is in it, so a role lists it when it could run one at all.
    """
    try:
        return permits(registry, role, tool, {})
    except BrowserdError:
        return role in ("full", "read") or tool in role


def role_catalog(registry: Registry, controller: ControllerConfig) -> dict[str, Any]:
    """``help`` for a controller: its role, whether it has an approver, and its tools only.

    Every role may ask: an agent (``mcp --to``) learns from it which tools to offer.  Tools
    kept to this machine (the live view) are refused to every controller, so not listed.
    """
    catalog = describe(registry, None)
    return {
        "role": controller.role,
        "approver": controller.approver is not None,
        "tools": [
            t
            for t in catalog["tools"]
            if may_list(registry, controller.role, t["name"])
            and not registry.get(t["name"]).local_only
        ],
    }


@dataclass(frozen=True)
class Queued:
    """A controller's command in its queue, and the write that holds it in the store."""

    incoming: Incoming
    held: asyncio.Future[None]


@dataclass
class Approval:
    """A gated command waiting for its approver."""

    code: str
    approver: str
    decided: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


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
        controllers: dict[str, ControllerConfig],
        command_timeout: float,
        queue_size: int,
        local_tools: LocalTools | None = None,
        logged_in: Callable[[], bool] = lambda: True,
    ) -> None:
        """``logged_in`` says whether an identity is logged in now (the daemon's login)."""
        self.registry, self.browser, self.store = registry, browser, store
        self.logged_in = logged_in
        self._reply, self._send = reply, send
        self.controllers = controllers
        self.command_timeout, self.queue_size = command_timeout, queue_size
        self._local_tools = local_tools
        self._queues: dict[str, asyncio.Queue[Queued | None]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._approvals: dict[str, Approval] = {}
        self._running: dict[str, str] = {}
        self._schemes: dict[str, Scheme] = {}
        self._guesses: dict[str, int] = {}  # approve/deny codes sent by a non-approver
        self._closing = False
        self.asker: Asker | None = None
        self.worker_name = ""  # whose approvals and held commands these are ([state] worker)
        # The daemon's worker (leases, fencing, saved sessions); None where no DM is served
        # (MCP --local, tests of the dispatcher alone): commands are then held unfenced.
        self.worker: LeaseHolder | None = None

    # --- intake ------------------------------------------------------------------------

    def approvers(self) -> set[str]:
        """Keys that may send ``approve``/``deny`` without being controllers."""
        return {c.approver for c in self.controllers.values() if c.approver}

    def scheme_of(self, pubkey: str) -> Scheme:
        """The DM scheme this key last wrote in (NIP-17 until it has written)."""
        return self._schemes.get(pubkey, "nip17")

    def is_known(self, pubkey: str) -> bool:
        """Allow-listed: a controller or an approver (read at each message: SIGHUP-safe)."""
        return pubkey in self.controllers or pubkey in self.approvers()

    def approval_code(self, content: str) -> str | None:
        """The code of an ``approve``/``deny`` message, or None for anything else."""
        match = APPROVAL.match(content)
        return match[2].upper() if match else None

    def holds_code(self, code: str) -> bool:
        """Whether a command of this worker waits for an approval with ``code``."""
        return code in self._approvals

    def idle(self, controller: str) -> bool:
        """Nothing of ``controller``'s runs or waits here (it may move to another worker)."""
        queue = self._queues.get(controller)
        return controller not in self._running and (queue is None or queue.empty())

    def submit(self, incoming: Incoming) -> None:
        """Take an authenticated message; never blocks the inbox.

        The key's DM scheme is recorded only for what is acted on: a stale kind 4 that is
        refused must not switch a NIP-17 controller's replies to NIP-04.
        """
        match = APPROVAL.match(incoming.content)
        if incoming.refusal is None and match:
            if incoming.sender in self.approvers():
                self._schemes[incoming.sender] = incoming.scheme
            self._spawn(self._decide(incoming, match[1].lower() == "approve", match[2].upper()))
            return
        asking = incoming.refusal is None and incoming.sender in self.controllers
        stop = ask_stop(self.registry, incoming.content) if asking and self.asker else None
        if stop is not None:
            self._spawn(self._stop_ask(incoming, stop))
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
        queue = self._queues.get(incoming.sender)
        if queue is None:
            queue = self._queues[incoming.sender] = asyncio.Queue()
            self._workers[incoming.sender] = asyncio.create_task(self._work(queue))
        if queue.qsize() >= self.queue_size:
            error = BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"{queue.qsize()} commands are already waiting; send this one again later.",
            )
            self._spawn(self._handle(incoming, error))
            return
        self._schemes[incoming.sender] = incoming.scheme
        # Held at once, in arrival order; the queue's worker waits for it before running.
        queue.put_nowait(Queued(incoming, asyncio.ensure_future(self._hold(incoming))))

    async def _hold(self, incoming: Incoming) -> None:
        """Record the queued command, so a daemon killed before answering answers it later."""
        request = None
        with contextlib.suppress(BrowserdError):
            request = parse_request(incoming.content, self.registry)
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

    async def _work(self, queue: asyncio.Queue[Queued | None]) -> None:
        """One controller's commands, in order.  A command whose hold could not be written
        (a full disk, a lost database) is answered with that error and not run: it could not
        be answered after a crash.  Whatever one raises past its own error handling (after
        its reply: the audit) is logged, and the queue goes on."""
        while (queued := await queue.get()) is not None:
            incoming = queued.incoming
            try:
                try:
                    await queued.held
                except BrowserdError as exc:
                    await self._handle(incoming, exc)
                    continue
                if not await self._start(incoming):
                    continue  # another worker took the controller over, and answers it
                answer = await self._handle(incoming, fenced=self.worker is not None)
                if self.worker is not None and self._changes_state(answer.request):
                    await self.worker.keep_state(incoming.sender)
            except Exception:
                log.exception("a command from %s failed after running", incoming.sender[:12])
            await self._store_quietly(self.store.release(incoming.outer_id))

    async def _start(self, incoming: Incoming) -> bool:
        """Mark the held command running; with a worker, only if the command and the
        controller's lease are still this worker's (fencing: a worker that was paused past
        its lease must not run what another worker has taken over)."""
        if self.worker is None:
            await self._store_quietly(self.store.mark_running(incoming.outer_id))
            return True
        try:
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
                await self._store_quietly(self.store.release(incoming.outer_id))
                return False
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return True  # the store is down: the claim was ours, run it as before
        log.warning("%s was taken over by another worker: not run here", incoming.event_id[:12])
        return False

    def _changes_state(self, request: Request | None) -> bool:
        """Whether the command may have changed the session's cookies or storage: any that
        is not ``read_only`` (the registry's policy field)."""
        if request is None or request.tool not in self.registry:
            return False
        return not self.registry.get(request.tool).read_only

    async def _store_quietly(self, write: Awaitable[Any]) -> None:
        """A store write the command does not depend on: a full disk is logged, not raised."""
        try:
            await write
        except BrowserdError as exc:
            log.error("%s", exc.message)

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
            incoming = Incoming(held.sender, held.scheme, "", held.event_id, held.outer_id, 0)  # type: ignore[arg-type]
            response = error_response(held.request_id, error)
            wire = self.encode(response, held.text)
            delivered = await self._deliver(incoming, wire, held.request_id)
            request = Request(id=held.request_id, tool=held.tool) if held.tool else None
            await self._audit(
                held.sender, held.scheme, request, response, time.perf_counter(), delivered
            )
            if delivered:
                await self._store_quietly(self.store.release(held.outer_id))

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
    ) -> Answer:
        """Parse, police, run, encode, deliver and audit one command: every transport's path.

        ``local`` is this machine's standing (the local channel, MCP ``--local``): full role,
        no approval, the local-only tools; otherwise ``owner`` must be an allow-listed
        controller.  With a ``refusal`` nothing runs: the sender gets that error, with its
        request's id when the message parses.  ``deliver`` sends a message to the sender (a
        DM) and says whether it went out: the reply, and before it any notice that the
        command waits for its approver; without it the caller sends ``Answer.wire`` itself.
        ``fence()`` is asked before the reply goes out: False means another worker took the
        command over and answered it, so this reply stays unsent.
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
        wire = self.encode(response, as_text)
        if fence is not None and not await fence():
            log.warning("the reply to %s stays unsent: another worker answered it", owner[:12])
            return Answer(response, wire, request)
        delivered = True if deliver is None else await deliver(wire, response.get("id"))
        await self._audit(owner, transport, request, response, started, delivered)
        return Answer(response, wire, request)

    def encode(self, response: Response, as_text: bool) -> str:
        """``protocol.encode`` with the configured result cap."""
        return encode(response, as_text, self.browser.config.result_cap)

    async def _serve(
        self, owner: str, request: Request, local: bool, as_text: bool, deliver: Deliver | None
    ) -> Response:
        if request.tool not in LOGIN_TOOLS and not self.logged_in():
            raise BrowserdError(ErrorCode.NOT_LOGGED_IN, NOT_LOGGED_IN_MESSAGE)
        if local:
            if request.tool in LOCAL_ONLY and self._local_tools is not None:
                data = await self._local_tools(request.tool, request.params or {})
                return {"id": request.id, "success": True, "data": data}
            return await self.execute(owner, request, None)
        controller = self.controllers.get(owner)
        if controller is None:  # removed by a reload while queued
            raise BrowserdError(ErrorCode.FORBIDDEN, "This key is no longer allowed.")
        self._running[owner] = request.tool
        try:
            if request.tool == "ask":
                return await self._ask(owner, request, controller)

            async def waiting(seconds: float) -> None:
                if deliver is not None:
                    await deliver(notice(request.id, request.tool, seconds, as_text), request.id)

            return await self.execute(owner, request, controller, waiting)
        finally:
            self._running.pop(owner, None)

    async def _handle(
        self, incoming: Incoming, refusal: BrowserdError | None = None, fenced: bool = False
    ) -> Answer:
        """One DM: its reply goes back by DM, in the scheme it came in.  ``fenced``: it is a
        held command, answered only while its row is still this worker's."""

        async def deliver(wire: str, request_id: Any) -> bool:
            return await self._deliver(incoming, wire, request_id)

        async def fence() -> bool:
            try:
                return await self.store.answering(incoming.outer_id, self.worker_name)
            except BrowserdError:
                return True  # the store is down: answer rather than stay silent

        return await self.handle(
            incoming.sender,
            incoming.content,
            transport=incoming.scheme,
            deliver=deliver,
            refusal=refusal,
            fence=fence if fenced else None,
        )

    async def _deliver(self, incoming: Incoming, text: str, request_id: Any) -> bool:
        try:
            return await self._reply(incoming, text, request_id)
        except Exception:
            log.exception("could not send the reply to %s", incoming.sender[:12])
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
        await self._store_quietly(
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
        """Run ``request`` for ``owner`` under ``controller``'s role (None: the local channel).

        ``waiting(seconds)`` is told when the command is held for its approver.
        """
        if request.tool in LOCAL_ONLY and controller is not None:
            raise BrowserdError(
                ErrorCode.FORBIDDEN,
                f"{request.tool} works only on the local control channel, never over messages.",
            )
        if controller is not None and self.registry.local_only(request.tool, request.params):
            raise BrowserdError(ErrorCode.FORBIDDEN, NO_STREAM_BY_MESSAGE.format(request.tool))
        if request.tool == "ask":
            raise BrowserdError(
                ErrorCode.FORBIDDEN,
                "ask works over direct messages only: its steps are approved by DM.",
            )
        self.registry.get(request.tool)  # UNKNOWN_TOOL before anything else
        if controller is not None and request.tool == "help":  # every role may ask
            _, asked = self.registry.validate("help", request.params)
            name = getattr(asked, "tool", None)
            data = (
                describe(self.registry, name) if name else role_catalog(self.registry, controller)
            )
            return {"id": request.id, "success": True, "data": data}
        session = await self.browser.session(owner)
        if controller is not None:
            check_role(self.registry, controller, request)
            if controller.approver and self.registry.is_gated(request.tool, request.params):
                who = controller.name or npub_encode(owner)[:20] + "…"
                what = await describe_action(self.registry, session, request)
                approver = controller.approver
                await self.consent(controller, approver, request.tool, who, what, waiting)
        return await self._run(session, request)

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

    async def _ask(self, owner: str, request: Request, controller: ControllerConfig) -> Response:
        check_role(self.registry, controller, request)
        if self.asker is None:
            raise BrowserdError(ErrorCode.UNAVAILABLE, "ask is not set up in this daemon.")
        return await self.asker.run(owner, request, controller)

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
            if (
                request.tool in LOCAL_ONLY
                or request.tool == "ask"
                or self.registry.local_only(request.tool, request.params)
            ):
                raise BrowserdError(ErrorCode.FORBIDDEN, f"{request.tool} is not for ask.")
            self.registry.get(request.tool)
            session = await self.browser.session(owner)
            check_role(self.registry, controller, request)
            gated = self.registry.is_gated(request.tool, request.params)
            sends = self.registry.sends(request.tool, request.params)
            through = self.registry.get(request.tool).delegates is not None
            # Read only where consent turns on it: reading costs a full snapshot of the page.
            judged = gated and not through
            element = await target_of(session, request.tool, request.params) if judged else None
            commit = judged and commits(request.tool, request.params, element)
            auto = controller.ask.auto_approve
            if needs_consent(request.tool, gated or sends, through, commit, auto):
                what = await describe_action(self.registry, session, request, element)
                who = f"ask (a model, for {controller.name or npub_encode(owner)[:20] + '…'})"
                why = f". Why: {reason}" if reason else ""
                approver = controller.approver or owner
                await self.consent(controller, approver, request.tool, who, what + why)
            target = "" if element is None else element.describe()
            response = await self._run(session, request)
            return response, target
        except BrowserdError as exc:
            response = error_response(None, exc)
            raise
        finally:
            if response is not None:
                await self._audit(owner, "ask", request, response, started)

    async def _stop_ask(self, incoming: Incoming, request: Request) -> None:
        assert self.asker is not None
        stopped = self.asker.stop(incoming.sender)
        note = "Stopping the running ask turn." if stopped else "No ask turn is running."
        response = {"id": request.id, "success": True, "data": {"stopped": stopped, "note": note}}
        await self._deliver(incoming, self.encode(response, is_text(incoming.content)), request.id)
        await self._audit(incoming.sender, incoming.scheme, request, response, time.perf_counter())

    async def notify(self, recipient: str, text: str) -> bool:
        """A message to a controller outside any reply (ask's progress), in its scheme."""
        try:
            return await self._send(recipient, text, self.scheme_of(recipient))
        except Exception:
            log.exception("could not send a message to %s", recipient[:12])
            return False

    # --- consent -----------------------------------------------------------------------

    async def consent(
        self,
        controller: ControllerConfig,
        approver: str,
        tool: str,
        who: str,
        what: str,
        waiting: Waiting | None = None,
    ) -> None:
        """Ask ``approver`` by DM whether ``who`` may run ``what`` (a ``tool``), with a fresh
        code, recorded in the store for as long as it waits: every worker reads the answer,
        and the one named there takes it.

        Returns on ``approve``; raises ``DENIED`` on deny, the timeout or a failed delivery,
        and ``UNAVAILABLE`` when the store cannot record the code.  ``waiting(seconds)``
        hears once the approver has been asked (the requester's notice).
        """
        code = await self._approval_code(controller, approver, tool)
        approval = Approval(code, approver)
        self._approvals[code] = approval
        scheme = self.scheme_of(approver)
        try:
            for message in approval_messages(who, what, code, controller.approval_timeout):
                if not await self._send(approver, message, scheme):
                    raise BrowserdError(
                        ErrorCode.DENIED,
                        "The approval request could not be delivered to the approver.",
                    )
            if waiting is not None:
                await waiting(controller.approval_timeout)
            async with asyncio.timeout(controller.approval_timeout):
                approved = await approval.decided
        except TimeoutError:
            raise BrowserdError(
                ErrorCode.DENIED,
                f"The approver did not answer within {controller.approval_timeout:g} s.",
            ) from None
        finally:
            self._approvals.pop(code, None)
            await self._store_quietly(self.store.drop_approval(code))
        if not approved:
            raise BrowserdError(ErrorCode.DENIED, "The approver denied this command.")

    async def _approval_code(self, controller: ControllerConfig, approver: str, tool: str) -> str:
        """A code no approval waits under, on any worker, recorded as this one's."""
        for _ in range(8):  # 32^6 codes: a taken one comes up about once in a billion
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(6))
            if code not in self._approvals and await self.store.hold_approval(
                code,
                worker=self.worker_name,
                controller=controller.pubkey,
                approver=approver,
                tool=tool,
                expires_in=controller.approval_timeout + APPROVAL_DELIVERY,
            ):
                return code
        raise BrowserdError(ErrorCode.UNAVAILABLE, "No free approval code; send this again.")

    def pending_codes(self, approver: str) -> list[str]:
        """The codes waiting for ``approver``'s answer (tests and status)."""
        return [a.code for a in self._approvals.values() if a.approver == approver]

    async def _decide(self, incoming: Incoming, approve: bool, code: str) -> None:
        """An ``approve``/``deny`` from a known key: only the held command's approver decides.

        Anything else is a guess: it decides nothing, and the guesser's approver (a
        controller trying to approve its own command) is told, at the 1st, 10th, 100th… try.
        """
        approval = self._approvals.get(code)
        if approval is None or approval.approver != incoming.sender or approval.decided.done():
            answer = f"No command is waiting for your decision on code {code}."
            await self._tell_approver_of_guess(incoming.sender)
        else:
            approval.decided.set_result(approve)
            answer = f"{'Approved' if approve else 'Denied'}: {code}."
        log.info("approval %s from %s: %s", code, incoming.sender[:12], answer)
        await self._deliver(incoming, answer, None)

    async def _tell_approver_of_guess(self, sender: str) -> None:
        controller = self.controllers.get(sender)
        if controller is None or controller.approver is None:
            return
        count = self._guesses[sender] = self._guesses.get(sender, 0) + 1
        if str(count).strip("0") != "1":  # 1, 10, 100…: the approver is told, not flooded
            return
        who = controller.name or npub_encode(sender)[:20] + "…"
        notice = (
            f"{who} sent an approve/deny code {count} time(s) so far; only you decide its"
            " commands, and nothing was approved by it. If you did not expect this, remove the"
            " key from the allow-list."
        )
        with contextlib.suppress(Exception):
            await self._send(controller.approver, notice, self.scheme_of(controller.approver))

    # --- lifecycle ---------------------------------------------------------------------

    async def close(self) -> None:
        """Finish each running and queued command and its reply (a drain: what was claimed
        here is answered here); deny the commands held for their approver."""
        self._closing = True
        if self.asker is not None:
            self.asker.stop_all()
        for approval in list(self._approvals.values()):
            if not approval.decided.done():
                approval.decided.set_result(False)
        for queue in self._queues.values():
            queue.put_nowait(None)
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def status(self) -> dict[str, Any]:
        """Running commands and queue depths, for the status page (the approvals waiting on
        every worker come from the store)."""
        return {
            "running": dict(self._running),
            "queued": {pk: q.qsize() for pk, q in self._queues.items() if q.qsize()},
        }


def _shortened(text: str, limit: int = 200) -> str:
    """A log line's params: long ones are cut, and say so."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _stopping() -> BrowserdError:
    return BrowserdError(ErrorCode.UNAVAILABLE, "The daemon is stopping; send this again later.")


def check_role(registry: Registry, controller: ControllerConfig, request: Request) -> None:
    """``FORBIDDEN`` unless the controller's role permits the request."""
    if not permits(registry, controller.role, request.tool, request.params):
        raise BrowserdError(
            ErrorCode.FORBIDDEN,
            f"{request.tool} is not allowed for this key (role {controller.role!r}).",
        )


def ask_stop(registry: Registry, content: str) -> Request | None:
    """The request when ``content`` is ``ask --stop`` (text or JSON), else None."""
    if "stop" not in content:
        return None
    try:
        request = parse_request(content, registry)
    except BrowserdError:
        return None
    return request if request.tool == "ask" and request.params.get("stop") is True else None
