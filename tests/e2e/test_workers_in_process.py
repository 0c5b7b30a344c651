"""Workers in one process (daemon/workers.py): two ``Worker`` objects on one SQLite store, each
with the daemon's real dispatcher, decide which of them claims a controller's commands.  The
same code runs in the multi-process tests (test_e2e_workers.py); here each step is visible."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.daemon.config import ControllerConfig
from nostr_browserd.daemon.dispatch import Dispatcher
from nostr_browserd.daemon.placement import preferred
from nostr_browserd.daemon.session_state import SESSION_STATE, STATE_TIMEOUT
from nostr_browserd.daemon.workers import SEALED_ASIDE, Worker, _died_here
from nostr_browserd.dm.messages import Incoming
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.browser import local_dispatcher

LEASE = 1.0


@dataclass
class Node:
    """One worker: its dispatcher (on the shared store) and what it claimed, in order."""

    worker: Worker
    dispatcher: Dispatcher
    claimed: list[str] = field(default_factory=list)

    async def proceed(self, incoming: Incoming) -> None:
        """What the inbox does with a command this worker may take: claim it."""
        if await self.dispatcher.store.claim([incoming.outer_id]):
            self.claimed.append(incoming.outer_id)

    async def offer(self, incoming: Incoming) -> bool:
        """The inbox's step: admitted ones are claimed at once, the rest kept aside."""
        admitted = await self.worker.admit(incoming, self.proceed)
        if admitted:
            await self.proceed(incoming)
        return admitted


def command(controller: str, n: int) -> Incoming:
    text = json.dumps({"id": n, "tool": "help"})
    return Incoming(controller, "nip17", text, f"{n:064x}", f"{n + 1000:064x}", 0)


@pytest.fixture
async def two(tmp_path) -> AsyncIterator[tuple[Node, Node, str]]:
    """Workers w1 and w2 on one store, and a controller that prefers w1."""
    async with workers_on(BrowserPool(), tmp_path) as nodes:  # never started: no browser
        yield nodes


@pytest.fixture
async def two_browsing(browser_pool, tmp_path) -> AsyncIterator[tuple[Node, Node, str]]:
    """The same, on the real browser: the controller's context and login state exist."""
    async with workers_on(browser_pool, tmp_path) as (w1, w2, controller):
        yield w1, w2, controller
        await browser_pool.release(controller)


@contextlib.asynccontextmanager
async def workers_on(pool: BrowserPool, tmp_path) -> AsyncIterator[tuple[Node, Node, str]]:
    """Workers w1 and w2 on one store, both on ``pool``, and a controller that prefers w1."""
    controller = next(
        f"{i:064x}" for i in range(100) if preferred(f"{i:064x}", ["w1", "w2"]) == "w1"
    )
    nodes = []
    identity = KeySigner.generate()  # workers of one daemon: one identity
    for name in ("w1", "w2"):
        dispatcher = local_dispatcher(
            pool,
            tmp_path,
            controllers={controller: ControllerConfig(pubkey=controller)},
            worker=lambda d, name=name: Worker(d.store, name, LEASE, dispatcher=d, browser=pool),
            identity=identity,
        )
        worker = dispatcher.worker
        assert isinstance(worker, Worker)
        await worker.start()
        nodes.append(Node(worker, dispatcher))
    for node in nodes:
        await node.worker.beat()  # each sees the other live
    yield nodes[0], nodes[1], controller
    for node in nodes:
        await node.worker.leave()
        await node.dispatcher.close()
        await node.dispatcher.store.close()


async def hold(node: Node, incoming: Incoming) -> None:
    """What ``node``'s dispatcher records of a claimed command before it runs."""
    await node.dispatcher.store.hold(
        outer_id=incoming.outer_id,
        event_id=incoming.event_id,
        sender=incoming.sender,
        scheme=incoming.scheme,
        request_id=json.loads(incoming.content)["id"],
        text=False,
        tool="help",
        worker=node.worker.name,
    )


async def until(condition, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


def replies_of(node: Node) -> list[dict]:
    """The replies ``node``'s dispatcher sends from now on, kept here instead of sent."""
    sent = []

    async def reply(incoming: Incoming, text: str, request_id: object) -> bool:
        sent.append(json.loads(text))
        return True

    node.dispatcher.delivery._reply = reply
    return sent


async def take_over(paused: Node, taker: Node, controller: str) -> None:
    """``paused`` stops beating (paused past its lease) until ``taker`` took ``controller``
    (and, taking it, answered what ``paused`` held)."""
    for task in paused.worker._tasks:
        task.cancel()
    async with asyncio.timeout(10):
        while not await taker.worker._lease(controller, waited=LEASE):
            await asyncio.sleep(0.02)


async def test_a_controller_leased_elsewhere_is_kept_aside_and_dropped_once_claimed(two):
    w1, w2, controller = two
    first = command(controller, 1)
    assert not await w2.offer(first), "w1 is preferred: w2 keeps it aside, unclaimed"
    assert await w1.offer(first) and w1.claimed == [first.outer_id]
    await until(lambda: not w2.worker.aside)
    assert w2.claimed == [], "w1 claimed it: w2 dropped it"
    assert {lease.worker for lease in await w1.dispatcher.store.leases()} == {"w1"}


async def test_a_held_fresh_lease_is_not_written_again_for_each_command(two, monkeypatch):
    w1, _, controller = two
    taken = []
    take_lease = w1.dispatcher.store.take_lease

    async def counted(*args):
        taken.append(args)
        return await take_lease(*args)

    monkeypatch.setattr(w1.dispatcher.store, "take_lease", counted)
    for n in (1, 2, 3):
        assert await w1.offer(command(controller, n))
    assert len(taken) == 1, "taken once; the next ones are within a third of the lease"
    for task in w1.worker._tasks:  # no heartbeat renews it meanwhile
        task.cancel()
    await asyncio.sleep(LEASE / 3)
    assert await w1.offer(command(controller, 4))
    assert len(taken) == 2, "asked again once a third of the lease has passed"
    assert w1.claimed == [command(controller, n).outer_id for n in (1, 2, 3, 4)]


async def test_the_heartbeat_goes_on_after_an_unexpected_error(two, monkeypatch):
    """A bug in one beat must not stop the heartbeat: every lease here would expire."""
    w1, _, controller = two
    beats = []
    beat = w1.worker.beat

    async def failing_once() -> None:
        beats.append(None)
        if len(beats) == 1:
            raise RuntimeError("a bug in one beat")
        await beat()

    monkeypatch.setattr(w1.worker, "beat", failing_once)
    await until(lambda: len(beats) >= 3)
    assert await w1.offer(command(controller, 1)), "w1 still takes its controller"


async def test_a_dead_workers_controller_goes_on_elsewhere_in_order(two):
    w1, w2, controller = two
    assert await w1.offer(command(controller, 1))
    for task in w1.worker._tasks:  # w1 dies: no heartbeat, no renewal, no release
        task.cancel()
    later = [command(controller, n) for n in (2, 3, 4)]
    for incoming in later:
        assert not await w2.offer(incoming), "leased to w1 until it expires"
    await until(lambda: len(w2.claimed) == 3)
    assert w2.claimed == [i.outer_id for i in later], "all of them, in order, once"
    assert w1.claimed == [command(controller, 1).outer_id]
    assert [lease.worker for lease in await w2.dispatcher.store.leases()] == ["w2"]


async def test_a_paused_worker_neither_runs_nor_answers_what_was_taken_over(two):
    w1, w2, controller = two
    held = command(controller, 1)
    assert await w1.offer(held)
    await hold(w1, held)
    for task in w1.worker._tasks:  # paused past its lease
        task.cancel()
    answered = []

    async def answer_held(rows):
        answered.extend(rows)

    w2.dispatcher.lanes.answer_held = answer_held
    assert not await w2.offer(command(controller, 2))
    await until(lambda: w2.claimed)
    assert [p.outer_id for p in answered] == [held.outer_id], "w2 answered w1's command"
    assert not await w1.dispatcher.lanes._start(held), "w1 wakes: it must not run it"


async def test_a_late_workers_running_command_is_left_to_it_not_answered_as_interrupted(two):
    """Issue 27 §1.2: only a dead worker's commands are adopted.  w1 lives (its row beats)
    but its lease of the controller lapsed: w2 takes the controller over and leaves w1's
    running command to w1, which answers it truly (it ran)."""
    w1, w2, controller = two
    running = command(controller, 1)
    assert await w1.offer(running)
    await hold(w1, running)
    assert await w1.dispatcher.lanes._start(running)
    for task in w1.worker._tasks:  # its leases lapse, while its row beats on
        task.cancel()

    async def beating() -> None:
        while True:
            await w1.dispatcher.store.heartbeat(
                "w1", w1.worker.instance, running=1, queued=0, contexts=0
            )
            await asyncio.sleep(LEASE / 4)

    answered = []

    async def answer_held(rows):
        answered.extend(rows)

    w2.dispatcher.lanes.answer_held = answer_held
    alive = asyncio.create_task(beating())
    try:
        assert not await w2.offer(command(controller, 2))
        await until(lambda: w2.claimed)
    finally:
        alive.cancel()
    assert answered == [], "w1 is alive: its command is not answered as interrupted"
    assert await w1.dispatcher.store.answering(running.outer_id, "w1"), "w1 answers it"


def test_a_worker_name_is_given_up_at_once_only_by_a_process_that_died_on_this_host():
    finished = subprocess.Popen(["true"])
    finished.wait()
    host = socket.gethostname()
    assert _died_here(f"{host}/{finished.pid}/a1")
    assert not _died_here(f"{host}/{os.getppid()}/a1"), "alive"
    assert not _died_here(f"{host}/{os.getpid()}/a1"), "this process: a container's pid 1"
    assert not _died_here(f"elsewhere/{finished.pid}/a1"), "another host's: wait for silence"
    assert not _died_here("0123abcd"), "an older release's token"


async def test_a_paused_worker_does_not_answer_a_command_taken_over_while_it_ran(two):
    """w1 was paused in the middle of a command; w2 took the controller over and answered
    it as interrupted.  w1's command then finishes: its reply must stay unsent."""
    w1, w2, controller = two
    held = command(controller, 1)
    assert await w1.offer(held)
    await hold(w1, held)
    assert await w1.dispatcher.lanes._start(held), "running on w1"
    by_w1, by_w2 = replies_of(w1), replies_of(w2)
    await take_over(w1, w2, controller)
    assert [r["error"]["code"] for r in by_w2] == ["INTERRUPTED"]
    await w1.dispatcher._handle(held, fenced=True)  # w1 wakes and its command finishes
    assert by_w1 == [], "w2 answered it: w1's reply would be a second one"


@pytest.mark.parametrize("noticed_by", ["heartbeat", "command"])
async def test_a_worker_that_lost_a_lease_stops_serving_its_controller(
    two_browsing, noticed_by, caplog
):
    """w1 wakes after w2 took its controller: whichever sees it first, the heartbeat or a
    queued command's renewal before it starts, w1 closes the controller's context."""
    w1, w2, controller = two_browsing
    assert await w1.offer(command(controller, 1))
    await w1.worker.browser.session(controller)
    await take_over(w1, w2, controller)
    if noticed_by == "heartbeat":
        await w1.worker.beat()
    else:
        assert not await w1.worker.renew(controller)
    assert controller not in w1.worker.held
    assert w1.worker.browser.existing(controller) is None, "its context is closed"
    assert "lost the lease of" in caplog.text


async def test_a_worker_that_lost_a_lease_does_not_overwrite_the_new_holders_login(
    two_browsing, site_url
):
    w1, w2, controller = two_browsing
    assert await w1.offer(command(controller, 1))
    session = await w1.worker.browser.session(controller)
    await session.page.goto(site_url)
    await session.main_context().add_cookies([{"name": "login", "value": "old", "url": site_url}])
    await take_over(w1, w2, controller)
    theirs = {"cookies": [], "origins": [{"origin": site_url, "localStorage": []}]}
    await w2.dispatcher.store.save_state(controller, SESSION_STATE, theirs)  # w2 logged in
    await w1.worker.keep_state(controller)  # w1 wakes after a command that changed its login
    assert await w1.dispatcher.store.load_state(controller, SESSION_STATE) == theirs


async def test_a_drained_worker_hands_its_controllers_over_at_once(two):
    w1, w2, controller = two
    assert await w1.offer(command(controller, 1))
    await w1.worker.drain()
    assert not await w1.offer(command(controller, 2)), "draining: nothing new"
    assert not await w2.offer(command(controller, 2))
    await w1.worker.leave()
    await w2.worker.beat()  # w1 is gone: w2 is the preferred worker now
    await until(lambda: w2.claimed)
    assert w2.claimed == [command(controller, 2).outer_id]
    assert [w.name for w in await w2.dispatcher.store.workers() if w.gone] == ["w1"]


async def test_a_command_held_after_its_controller_moved_is_answered_as_not_run(two):
    w1, w2, controller = two
    late = command(controller, 1)
    assert await w2.worker._lease(controller, waited=LEASE), "w2 took it: w1 was paused"
    await hold(w1, late)  # and w1's hold of a command it had claimed lands now
    replies = replies_of(w1)
    assert not await w1.dispatcher.lanes._start(late), "not run on w1"
    assert [r["error"]["code"] for r in replies] == ["UNAVAILABLE"], "but answered"
    assert "moved to another worker" in replies[0]["error"]["message"]
    assert await w1.dispatcher.store.unanswered("w1") == []


async def test_a_seal_is_opened_where_it_runs_and_everywhere_while_approvals_wait(two, monkeypatch):
    """Issue 36 §2: a worker that does not serve the controller named by a wrap keeps it
    sealed, unless one of its commands waits for an approval (any approver may send the
    code) or too many messages are kept aside already (a flood of forged seals)."""
    w1, w2, controller = two
    assert w1.worker.opens(controller) and not w2.worker.opens(controller)
    assert w2.worker.opens("ee" * 32), "not a controller: answered by whoever claims it"
    with monkeypatch.context() as waiting:  # a command of w2 waits for an approval
        waiting.setattr(w2.dispatcher.approvals, "waiting", lambda: True)
        assert w2.worker.opens(controller)
    sealed = command(controller, 1)
    w2.worker.aside[controller] = deque([(sealed, w2.proceed)] * (SEALED_ASIDE - 1))
    assert not w2.worker.opens(controller)
    w2.worker.aside[controller].append((sealed, w2.proceed))
    assert w2.worker.opens(controller), "too many kept aside: opened, and judged, here"
    w2.worker.aside.clear()


async def test_an_approval_is_left_to_the_worker_whose_command_waits_for_it(two):
    w1, w2, controller = two
    approver = "ee" * 32
    await w1.dispatcher.store.hold_approval(
        "K7P2QX", worker="w1", controller=controller, approver=approver, tool="click", expires_in=60
    )
    answer = Incoming(approver, "nip17", "approve K7P2QX", "1" * 64, "2" * 64, 0)
    assert not await w2.worker.admit(answer, w2.proceed), "w2 leaves it to w1"
    assert await w1.worker.admit(answer, w1.proceed)
    guess = Incoming(approver, "nip17", "approve NOSUCH", "3" * 64, "4" * 64, 0)
    assert await w2.worker.admit(guess, w2.proceed), "nobody holds it: whoever claims answers"
    assert not w2.worker.aside, "an approval is never kept aside"


async def test_a_session_is_kept_only_with_other_workers_and_a_busy_page_does_not_hold_it(
    browser_pool, site_url, tmp_path
):
    """The login state is read after each command that may change it: a lone worker skips
    that, and a page in a busy loop (which never lets the read finish) is given up on."""
    owner = "ab" * 32
    dispatcher = local_dispatcher(
        browser_pool, tmp_path, controllers={owner: ControllerConfig(pubkey=owner)}
    )
    worker = Worker(dispatcher.store, "w1", LEASE, dispatcher=dispatcher, browser=browser_pool)
    session = await browser_pool.session(owner)
    try:
        await session.page.goto(site_url)
        await session.main_context().add_cookies([{"name": "login", "value": "1", "url": site_url}])
        await worker.keep_state(owner)
        assert await dispatcher.store.load_state(owner, SESSION_STATE) is None, "alone: skipped"
        worker.placement.read_live(["w2"], 0.0)  # as its heartbeat reads them once w2 is up
        await worker.keep_state(owner)
        saved = await dispatcher.store.load_state(owner, SESSION_STATE)
        assert [c["value"] for c in saved["cookies"]] == ["1"]
        # The loop must have begun before the read: the page says so, then spins.
        async with session.page.expect_console_message(lambda m: m.text == "spins") as began:
            spin = 'console.log("spins"); for (;;) {}'
            spinning = asyncio.create_task(session.page.evaluate(spin))
            await began.value
        await session.main_context().add_cookies([{"name": "login", "value": "2", "url": site_url}])
        async with asyncio.timeout(STATE_TIMEOUT + 10):
            await worker.keep_state(owner)
        assert await dispatcher.store.load_state(owner, SESSION_STATE) == saved, "kept as it was"
        spinning.cancel()
    finally:
        await session.close()
        await dispatcher.close()
        await dispatcher.store.close()
