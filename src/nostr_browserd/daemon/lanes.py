"""Lanes, the pipeline's first stage: each controller's commands in order, held until answered.

- One ``Lane`` per controller: its commands run one after another, in the order they
  arrived; different controllers run concurrently, each in its own browser session.  The
  queue is bounded: a flood gets ``UNAVAILABLE`` instead of memory.
- Held rows: a queued command is written to the store (``Store.hold``) before it runs, so a
  daemon killed before answering answers it at its next start (``answer_unanswered``), as
  not run or as interrupted, and never runs it twice.
- Fencing: with several workers, a command starts only while it and its controller's lease
  are still this worker's; a worker paused past its lease runs nothing another has taken.
- While the controller's ``ask`` turn waits for them (a handoff), their commands run in a
  lane beside it, on the same path (held, fenced, saved), and the turn keeps its place.
- A command of the daemon's own for a controller (a scheduled run, ``Lanes.run``) takes its
  place in the same lane, after what the controller sent before it: no message to hold or
  answer after a crash (the schedule's row says it ran), but the same order.

What a command is and whether it may run are the later stages' business: a lane hands each
one on, in its turn, to ``serve`` (the composer's pipeline).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..commands.protocol import Request, is_text
from ..commands.registry import Registry
from ..dm.messages import Incoming
from ..errors import BrowserdError, ErrorCode
from .delivery import Answer, Delivery, error_response
from .lease_holder import LeaseHolder
from .store import Pending, Store, quietly

log = logging.getLogger(__name__)

STORE_RETRY = 1.0  # seconds between two asks of a store that did not answer

# The rest of the pipeline for one DM: ``(incoming, refusal, fenced)`` → its answer.
Serve = Callable[[Incoming, BrowserdError | None, bool], Awaitable[Answer]]
# A command of the daemon's own, run in its turn (refusal: None) or refused at once.
Work = Callable[[BrowserdError | None], Awaitable[Answer]]


@dataclass(frozen=True)
class Queued:
    """A controller's command in its queue, the tool it names (None when it does not
    parse), and the write that holds it in the store."""

    incoming: Incoming
    tool: str | None
    held: asyncio.Future[None]


@dataclass(frozen=True)
class Job:
    """A command of the daemon's own in a controller's queue (a scheduled run): the tool it
    names, its path through the rest of the pipeline, and its answer once run."""

    controller: str
    tool: str | None
    work: Work
    answer: asyncio.Future[Answer]


@dataclass
class Lane:
    """One controller's place on this worker: its commands in arrival order, the task that
    runs them one after another, and the command running now (an ask's message is where
    its handoff screenshot goes)."""

    queue: asyncio.Queue[Queued | Job | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    current: Queued | Job | None = None
    # While this lane's ask turn waits for the person (a handoff): their commands' lane.
    aside: Lane | None = None

    @property
    def running(self) -> str | None:
        """The tool running now, for the status page."""
        return None if self.current is None else self.current.tool

    def waiting(self) -> int:
        """How many commands wait here and, during a handoff, in the person's lane."""
        return self.queue.qsize() + (0 if self.aside is None else self.aside.waiting())


class Lanes:
    """Every controller's lane on this worker, their held rows, and recovery."""

    def __init__(
        self,
        store: Store,
        delivery: Delivery,
        serve: Serve,
        *,
        queue_size: int,
        worker_name: str,
        registry: Registry,
    ) -> None:
        """``serve`` runs one command through the rest of the pipeline; the ``registry``
        says which commands may change a session's login (saved after them)."""
        self.store, self.delivery, self._serve = store, delivery, serve
        self.queue_size, self.worker_name, self.registry = queue_size, worker_name, registry
        self.worker: LeaseHolder | None = None  # set by the composer, once made
        self.handing_over: Callable[[str], bool] = lambda controller: False
        self._lanes: dict[str, Lane] = {}
        self.closing = False

    def lane(self, controller: str) -> Lane:
        """``controller``'s lane, made on its first command."""
        lane = self._lanes.get(controller)
        if lane is None:
            lane = self._lanes[controller] = Lane()
        return lane

    def current(self, controller: str) -> Queued | None:
        """``controller``'s command running now, if one from a message is."""
        current = self.lane(controller).current
        return current if isinstance(current, Queued) else None

    def _next_lane(self, controller: str) -> Lane:
        """Where ``controller``'s next command waits: its lane, or while its ask turn waits
        for them (a handoff), the lane beside it, made then, where their commands run one
        after another while the paused turn keeps its place."""
        lane = self.lane(controller)
        if not self.handing_over(controller):
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

    def enqueue(self, incoming: Incoming, request: Request | None) -> BrowserdError | None:
        """Queue a controller's command, held at once, in arrival order; the error to
        answer it with instead when its queue is full."""
        lane = self._open_lane(incoming.sender)
        queue = lane.queue
        if queue.qsize() >= self.queue_size:
            return _full(queue.qsize())
        # The queue's worker waits for the hold before running.
        held = asyncio.ensure_future(self._hold(incoming, request))
        queue.put_nowait(Queued(incoming, request.tool if request else None, held))
        return None

    async def run(self, controller: str, tool: str | None, work: Work) -> Answer:
        """Run ``work`` in ``controller``'s lane, after what they sent before it, and return
        its answer; refused at once (``work(error)``) when the queue is full or the daemon
        stops."""
        if self.closing:
            return await work(
                BrowserdError(ErrorCode.UNAVAILABLE, "The daemon is stopping; it was not run.")
            )
        lane = self._open_lane(controller)
        if lane.queue.qsize() >= self.queue_size:
            return await work(_full(lane.queue.qsize()))
        job = Job(controller, tool, work, asyncio.get_running_loop().create_future())
        lane.queue.put_nowait(job)
        return await job.answer

    def _open_lane(self, controller: str) -> Lane:
        """Where ``controller``'s next command waits, its worker started."""
        lane = self._next_lane(controller)
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(lane))
        return lane

    async def _run_job(self, lane: Lane, job: Job) -> None:
        """A command of the daemon's own, in its turn, as a message's would run: its
        controller's pages first (it moved here), kept after it.  One whose caller gave up
        waiting (the daemon stops) is not run."""
        if job.answer.done():
            return
        try:
            if self.worker is not None:
                await self.worker.follow(job.controller)
            lane.current = job
            try:
                answer = await job.work(None)
            finally:
                lane.current = None
        except Exception as exc:  # the caller's to report
            if not job.answer.done():
                job.answer.set_exception(exc)
            return
        if not job.answer.done():
            job.answer.set_result(answer)
        if self.worker is not None:
            await self.worker.keep_state(job.controller, login=self._changes_state(answer.request))

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

    async def _work(self, lane: Lane) -> None:
        """One lane's commands, in order: hold, fenced start, follow, serve (the lane's
        ``current`` meanwhile), keep the session, release.  A command whose hold could not
        be written (a full disk, a lost database) is answered with that error and not run:
        it could not be answered after a crash.  Whatever one raises past its own error
        handling (after its reply: the audit) is logged, and the queue goes on."""
        while (queued := await lane.queue.get()) is not None:
            if isinstance(queued, Job):
                try:
                    await self._run_job(lane, queued)
                except Exception:
                    log.exception("a command for %s failed after running", queued.controller[:12])
                continue
            incoming = queued.incoming
            try:
                try:
                    await queued.held
                except BrowserdError as exc:
                    await self._serve(incoming, exc, False)
                    continue
                if not await self._start(incoming):
                    continue  # another worker took the controller over, and answers it
                if self.worker is not None:  # it moved here: its pages first
                    await self.worker.follow(incoming.sender)
                lane.current = queued  # started: what the status page calls running
                try:
                    answer = await self._serve(incoming, None, self.worker is not None)
                finally:
                    lane.current = None
                if self.worker is not None:  # its pages always, its login if it may change
                    login = self._changes_state(answer.request)
                    await self.worker.keep_state(incoming.sender, login=login)
            except Exception:
                log.exception("a command from %s failed after running", incoming.sender[:12])
            await quietly(self.store.release(incoming.outer_id))

    def _changes_state(self, request: Request | None) -> bool:
        """Whether the command may have changed the session's cookies or storage: any that
        is not ``read_only`` (the registry's policy field)."""
        if request is None or request.tool not in self.registry:
            return False
        return not self.registry.get(request.tool).read_only

    async def _start(self, incoming: Incoming) -> bool:
        """Mark the held command running; with a worker, only if the command and the
        controller's lease are still this worker's (fencing: a worker that was paused past
        its lease must not run what another worker has taken over).  While the store cannot
        say, the command waits: run unconfirmed, it could run beside the worker that took the
        controller over, after that one answered it as not run."""
        if self.worker is None:
            await quietly(self.store.mark_running(incoming.outer_id))
            return True
        return await self.confirmed(lambda: self._may_start(incoming), incoming)

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
            await self._serve(incoming, moved, False)
            await quietly(self.store.release(incoming.outer_id))
            return False
        log.warning("%s was taken over by another worker: not run here", incoming.event_id[:12])
        return False

    async def confirmed(self, ask: Callable[[], Awaitable[bool]], incoming: Incoming) -> bool:
        """``ask()``'s answer from the store, asked again until the store gives one; False
        when the daemon stops first (the command's row stays: whoever serves its controller
        next answers it)."""
        while True:
            try:
                return await ask()
            except BrowserdError as exc:
                log.error("%s (%s waits for it)", exc.message, incoming.event_id[:12])
            if self.closing:
                return False
            await asyncio.sleep(STORE_RETRY)

    async def still_ours(self, incoming: Incoming) -> bool:
        """The fence before a held command's reply: whether its row is still this worker's
        (False: another worker took it over and answered it)."""
        return await self.confirmed(
            lambda: self.store.answering(incoming.outer_id, self.worker_name), incoming
        )

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
            wire = self.delivery.encode(response, held.text)
            delivered = await self.delivery.deliver(held, wire, held.request_id)
            request = Request(id=held.request_id, tool=held.tool) if held.tool else None
            await self.delivery.audit(
                held.sender, held.scheme, request, response, time.perf_counter(), delivered
            )
            if delivered:
                await quietly(self.store.release(held.outer_id))

    async def close(self) -> None:
        """Take nothing new; finish each running and queued command (a drain)."""
        self.closing = True
        working = [lane.task for lane in self._lanes.values() if lane.task is not None]
        for lane in self._lanes.values():
            lane.queue.put_nowait(None)
        await asyncio.gather(*working, return_exceptions=True)

    def status(self) -> dict[str, Any]:
        """Running commands and queue depths, for the status page."""
        return {
            "running": {pk: lane.running for pk, lane in self._lanes.items() if lane.running},
            "queued": {pk: n for pk, lane in self._lanes.items() if (n := lane.waiting())},
        }


def _full(waiting: int) -> BrowserdError:
    return BrowserdError(
        ErrorCode.UNAVAILABLE, f"{waiting} commands are already waiting; send this one again later."
    )
