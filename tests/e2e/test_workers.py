"""Several workers, one identity (issue 13 §2), on the real harness (tests/fixtures/cluster.py):
PostgreSQL, two relays, ``nostr-browserd run`` processes, nostr-sdk controllers, a counter page
that counts loads and clicks on its server.

- exactly once: every command runs once and is answered once, in each controller's order,
  and both workers take their share;
- a worker killed (``kill -9``) while its controllers are busy: within the lease plus 5 s the
  other worker answers their next commands, logged in as they were, and what the dead one
  held (interrupted, not run);
- a worker drained (SIGTERM) in the middle of its controllers' commands: nothing is lost, and
  the other worker carries on with their login;
- issue 27: commands from the first second with a second process under the first one's name
  (it waits); no move while a worker lives; a worker cut off from PostgreSQL (a TcpLink) runs
  and answers nothing; failover with pages (tabs reopened, the move said, old refs refused);
  a worker paused (SIGSTOP) past its lease runs and answers nothing when it wakes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from nostr_browserd.daemon.placement import preferred
from tests.fixtures.cluster import Cluster, ClusterController, Worker
from tests.fixtures.tcp_link import TcpLink

pytestmark = pytest.mark.timeout(300)

LEASE = 6.0  # seconds: short, so that a dead worker's controllers move on within the test
STORE_WAIT = "waits for it)"  # in a worker's log: a command waits for the store to answer


def settings(cluster: Cluster, lease: float = 15.0) -> None:
    """Room for a controller's whole pipeline in its queue, and the lease."""
    cluster.workers.settings = {"state": {"lease": lease}, "browser": {"queue_size": 32}}


async def controllers_for_both(cluster: Cluster, n: int) -> list[ClusterController]:
    """``n`` controllers or more, until each of workers w1 and w2 is preferred by one."""
    made = await cluster.controllers(n)
    while {preferred(c.pubkey, ["w1", "w2"]) for c in made} != {"w1", "w2"}:
        made += await cluster.controllers(1)
    return made


async def pipeline(
    controller: ClusterController, daemon: str, requests: list[dict[str, Any]]
) -> list[str]:
    """Send every request at once, in order, without waiting for answers; their ids."""
    ids = []
    for request in requests:
        request = {"id": secrets.token_hex(6), **request}
        await controller.send(daemon, json.dumps(request))
        ids.append(request["id"])
    return ids


async def answered(
    controller: ClusterController, ids: list[str], timeout: float = 120.0
) -> dict[str, list[dict[str, Any]]]:
    """Every answer to ``ids``, once each has at least one."""
    async with asyncio.timeout(timeout):
        while True:
            answers = await controller.answers()
            if all(i in answers for i in ids):
                return answers
            await asyncio.sleep(0.2)


def clicks_and_reads(page: str, pairs: int) -> list[dict[str, Any]]:
    """Open the counter page, then click and read its count, ``pairs`` times: the counts read
    back are 1, 2, 3… only if every click ran once and in order."""
    requests: list[dict[str, Any]] = [{"tool": "open", "params": {"url": page}}]
    for _ in range(pairs):
        requests.append({"tool": "click", "params": {"selector": "#click"}})
        requests.append({"tool": "get_text", "params": {"selector": "#count"}})
    return requests


def counts_read(answers: dict[str, list[dict[str, Any]]], ids: list[str]) -> list[str]:
    return [
        str(answers[i][0]["data"]["text"]).strip()
        for i in ids[2::2]  # the get_text after each click
    ]


def ran_on(cluster: Cluster, request_id: str) -> list[str]:
    """The workers whose log says they ran ``request_id``."""
    return [w.name for w in cluster.workers.started if f"command {request_id} " in w.tail(10**7)]


async def until_status(worker: Worker, condition: Callable[[dict[str, Any]], bool]) -> None:
    """Poll ``worker``'s status page until ``condition`` holds for it."""
    async with asyncio.timeout(60):
        while True:
            status = await asyncio.to_thread(worker.status)
            if status is not None and condition(status):
                return
            await asyncio.sleep(0.2)


async def running_with_a_click_queued(
    controller: ClusterController, cluster: Cluster, worker: Worker, ms: int
) -> tuple[str, str]:
    """A ``wait`` of ``ms`` running on ``worker`` and a click queued behind it: their ids."""
    waited, click = await pipeline(
        controller,
        cluster.pubkey,
        [
            {"tool": "wait", "params": {"ms": ms}},
            {"tool": "click", "params": {"selector": "#click"}},
        ],
    )
    await until_status(worker, lambda s: len(s["running"]) == 1)
    return waited, click


async def two_live_workers(cluster: Cluster) -> tuple[Worker, Worker]:
    """Start two workers and wait until each knows the other (its next heartbeat)."""
    first, second = await cluster.start_many(2)
    for worker in (first, second):
        await until_status(worker, lambda s: s["live"] == [first.name, second.name])
    return first, second


async def launched_together(cluster: Cluster, env: dict[str, str] | None = None) -> Worker:
    """Launch two workers at once (the second with ``env``) and return the first that serves:
    commands start before the workers have met, as in a deployment."""
    launched = [cluster.workers.launch(), cluster.workers.launch(env=env)]
    ready = {asyncio.create_task(asyncio.to_thread(w.wait_ready)): w for w in launched}
    done, _ = await asyncio.wait(ready, return_when=asyncio.FIRST_COMPLETED)
    first = done.pop()
    first.result()
    return ready[first]


async def opens_and_reads(
    controller: ClusterController, daemon: str, pages: list[str]
) -> list[str]:
    """Open each page, then read the address back: the read must run where the open ran.
    The ids of the commands sent."""
    ids = []
    for page in pages:
        ids += [secrets.token_hex(6), secrets.token_hex(6)]
        opening = {"id": ids[-2], "tool": "open", "params": {"url": page}}
        opened = await controller.command(daemon, opening, timeout=60)
        assert opened["success"], opened
        read = await controller.command(daemon, {"id": ids[-1], "tool": "get_url"}, timeout=60)
        assert read["success"], read
        assert read["data"]["url"] == page, "the read ran on the page its open left"
    return ids


async def opened_and_read_by_each(
    cluster: Cluster, controllers: list[ClusterController], click_counter: Any, pages: int
) -> list[set[str]]:
    """Every controller at once opens and reads back ``pages`` pages of its own, each once:
    the workers that ran each controller's commands."""
    sent = await asyncio.gather(
        *(
            opens_and_reads(
                c, cluster.pubkey, [click_counter.page(f"{i}-{n}") for n in range(pages)]
            )
            for i, c in enumerate(controllers)
        )
    )
    for controller in controllers:
        assert await controller.duplicates() == {}
    assert all(n == 1 for n in click_counter.loads.values()), click_counter.loads
    return [{w for r in ids for w in ran_on(cluster, r)} for ids in sent]


async def test_a_second_process_under_a_live_workers_name_serves_nothing(cluster, click_counter):
    """Issue 27 §1.1 and §1.2 as they were seen: two processes under one worker name (its
    default is the host name) both took that name's leases, so a controller's commands ran in
    two browsers in turn, and the one started second answered the first one's running
    commands as interrupted.  The second must wait until the name is free."""
    settings(cluster)
    controllers = await cluster.controllers(5)
    serving = await launched_together(cluster, env={"NOSTR_BROWSERD_STATE_WORKER": "w1"})
    twin = next(w for w in cluster.workers.started if w is not serving)
    served = await opened_and_read_by_each(cluster, controllers, click_counter, 6)
    assert all(workers == {serving.name} for workers in served), served
    async with asyncio.timeout(120):
        while "used by a live process" not in twin.tail(10**7):
            await asyncio.sleep(0.2)
    assert twin.alive


async def test_a_controller_does_not_move_while_its_worker_lives(cluster, click_counter):
    """Not even to a worker that joined later and is idle: its page would be lost."""
    settings(cluster, LEASE)
    controllers = await controllers_for_both(cluster, 4)
    first = await cluster.start()
    pages = [click_counter.page(f"stay{i}") for i in range(len(controllers))]
    for controller, page in zip(controllers, pages, strict=True):
        opened = await controller.command(cluster.pubkey, {"tool": "open", "params": {"url": page}})
        assert opened["success"], opened
    second = await cluster.start()
    await until_status(first, lambda s: s["live"] == [first.name, second.name])
    await asyncio.sleep(2 * LEASE)  # idle for two lease periods: long enough to be moved
    for controller, page in zip(controllers, pages, strict=True):
        request = {"id": secrets.token_hex(6), "tool": "get_url"}
        read = await controller.command(cluster.pubkey, request, timeout=60)
        assert read["success"] and read["data"]["url"] == page, read
        assert ran_on(cluster, request["id"]) == [first.name]


async def test_exactly_once_in_order_on_two_workers(cluster, click_counter):
    settings(cluster)
    controllers = await cluster.controllers(5)
    names = [w.name for w in await two_live_workers(cluster)]
    sent = {}
    for i, controller in enumerate(controllers):
        # 1 open + 19 commands: clicks and reads of the count, in turn
        sent[i] = await pipeline(
            controller, cluster.pubkey, clicks_and_reads(click_counter.page(f"c{i}"), 9)
        )
        sent[i].append((await pipeline(controller, cluster.pubkey, [{"tool": "get_url"}]))[0])
    for i, controller in enumerate(controllers):
        answers = await answered(controller, sent[i])
        assert all(answers[r][0]["success"] for r in sent[i]), answers
        assert await controller.duplicates() == {}
        assert counts_read(answers, sent[i][:-1]) == [str(n) for n in range(1, 10)]
        assert click_counter.clicks[f"c{i}"] == 9 and click_counter.loads[f"c{i}"] == 1
    # each controller was served by one worker, its preferred one: both took their share
    served = {}
    for i, controller in enumerate(controllers):
        workers = {w for r in sent[i] for w in ran_on(cluster, r)}
        assert len(workers) == 1, (i, workers)
        served[i] = workers.pop()
        assert served[i] == preferred(controller.pubkey, names)
    assert set(served.values()) == {preferred(c.pubkey, names) for c in controllers}
    status = cluster.workers.started[0].status()
    assert status is not None and {w["name"] for w in status["workers"]} == set(names)


def logged_in(i: int) -> dict[str, Any]:
    """The login a controller's session has: a cookie, set on the counter page."""
    return {"tool": "cookies_set", "params": {"name": "session", "value": f"s{i}"}}


def session_cookie(answer: dict[str, Any]) -> list[str]:
    assert answer["success"], answer
    return [c["value"] for c in answer["data"]["cookies"] if c["name"] == "session"]


async def test_a_killed_workers_controllers_go_on_elsewhere_logged_in(cluster, click_counter):
    settings(cluster, LEASE)
    controllers = await controllers_for_both(cluster, 4)
    first, second = await two_live_workers(cluster)
    names = [first.name, second.name]
    victims = [c for c in controllers if preferred(c.pubkey, names) == first.name]
    for i, controller in enumerate(controllers):
        opened = await controller.command(
            cluster.pubkey, {"tool": "open", "params": {"url": click_counter.page(f"k{i}")}}
        )
        assert opened["success"], opened
        assert (await controller.command(cluster.pubkey, logged_in(i)))["success"]
    busy = {
        c.pubkey: await pipeline(
            c,
            cluster.pubkey,
            [
                {"tool": "wait", "params": {"ms": 4000}},
                {"tool": "click", "params": {"selector": "#click"}},
            ],
        )
        for c in victims
    }
    await until_status(first, lambda s: len(s["running"]) == len(victims))
    first.kill()
    for controller in victims:
        i = controllers.index(controller)
        cookies = {"tool": "cookies_get", "params": {"url": click_counter.page(f"k{i}")}}
        after = await controller.command(cluster.pubkey, cookies, timeout=LEASE + 5)
        assert session_cookie(after) == [f"s{i}"], "its login came along"
        waited, click = busy[controller.pubkey]
        answers = await answered(controller, [waited, click])
        assert answers[waited][0]["error"]["code"] == "INTERRUPTED", "it was running"
        assert answers[click][0]["error"]["code"] == "UNAVAILABLE", "it was queued: not run"
        assert await controller.duplicates() == {}
    assert all(click_counter.clicks[f"k{i}"] == 0 for i in range(len(controllers)))
    assert "took over" in second.tail(10**7)


async def test_a_drained_worker_loses_nothing(cluster, click_counter):
    settings(cluster, LEASE)
    controllers = await controllers_for_both(cluster, 4)
    first, second = await two_live_workers(cluster)
    names = [first.name, second.name]
    sent = {}
    for i, controller in enumerate(controllers):
        page = click_counter.page(f"d{i}")
        requests = clicks_and_reads(page, 6)
        requests[1:1] = [{"tool": "wait", "params": {"ms": 1500}}, logged_in(i)]
        sent[i] = await pipeline(controller, cluster.pubkey, requests)
    for i, controller in enumerate(controllers):
        await answered(controller, sent[i][:1])  # the rest arrived and waits in its queue
    stopping = asyncio.create_task(asyncio.to_thread(first.terminate))
    await until_status(second, lambda s: any(w["draining"] or w["gone"] for w in s["workers"]))
    for i, controller in enumerate(controllers):
        # a new context on the other worker for the drained ones: open the page again
        more = clicks_and_reads(click_counter.page(f"d{i}"), 3)
        more.append({"tool": "cookies_get", "params": {"url": click_counter.page(f"d{i}")}})
        sent[i] += await pipeline(controller, cluster.pubkey, more)
    assert await stopping == 0, "drained and stopped"
    for i, controller in enumerate(controllers):
        answers = await answered(controller, sent[i])
        assert all(answers[r][0]["success"] for r in sent[i]), answers
        assert await controller.duplicates() == {}
        reads = [
            str(answers[r][0]["data"]["text"]).strip()
            for r in sent[i]
            if "text" in answers[r][0].get("data", {})
        ]
        assert reads == [str(n) for n in range(1, 10)], "every click once, in order"
        assert click_counter.clicks[f"d{i}"] == 9
        assert session_cookie(answers[sent[i][-1]][0]) == [f"s{i}"], "logged in as it was"
    assert "released" in first.tail(10**7)
    drained = [c for c in controllers if preferred(c.pubkey, names) == first.name]
    for controller in drained:
        i = controllers.index(controller)
        assert ran_on(cluster, sent[i][-1]) == [second.name], "taken over after the drain"


async def test_a_worker_cut_off_from_the_store_runs_nothing_and_answers_nothing(
    cluster, click_counter
):
    """Issue 27 §1.3: w1 reaches PostgreSQL through a link the test cuts while a command runs
    and another waits.  w2 takes the controller over and answers both, truly (interrupted, not
    run); w1 runs neither the queued click nor anything sent meanwhile, and answers nothing,
    before or after the link comes back.  No reply names the store."""
    settings(cluster, 3.0)
    link, through = await TcpLink.to(cluster.database)
    try:
        controllers = await controllers_for_both(cluster, 2)
        first = await cluster.start(env={"NOSTR_BROWSERD_STATE_DATABASE": through})
        second = await cluster.start()
        names = [first.name, second.name]
        for worker in (first, second):
            await until_status(worker, lambda s: s["live"] == names)
        controller = next(c for c in controllers if preferred(c.pubkey, names) == first.name)
        page = click_counter.page("cut")
        opening = {"id": secrets.token_hex(6), "tool": "open", "params": {"url": page}}
        assert (await controller.command(cluster.pubkey, opening, timeout=60))["success"]
        assert ran_on(cluster, opening["id"]) == [first.name]
        waited, click = await running_with_a_click_queued(controller, cluster, first, 3000)
        link.cut()
        (meanwhile,) = await pipeline(controller, cluster.pubkey, [{"tool": "get_url"}])
        answers = await answered(controller, [waited, click, meanwhile])
        assert answers[waited][0]["error"]["code"] == "INTERRUPTED", "it was running"
        assert answers[click][0]["error"]["code"] == "UNAVAILABLE", "it was queued: not run"
        assert answers[meanwhile][0]["success"] and ran_on(cluster, meanwhile) == [second.name]
        async with asyncio.timeout(120):  # until w1's pool gives up: its fence fails
            while STORE_WAIT not in first.tail(10**7):
                if click_counter.clicks["cut"] or await controller.duplicates():
                    break
                await asyncio.sleep(0.2)
        link.restore()
        told = ("stays unsent: another worker answered it", "taken over by another worker")
        async with asyncio.timeout(120):  # until w1 is back and has let both go, or ran one
            while not all(line in first.tail(10**7) for line in told):
                if click_counter.clicks["cut"] or await controller.duplicates():
                    break
                await asyncio.sleep(0.2)
        assert click_counter.clicks["cut"] == 0, "told it was not run: never run"
        assert await controller.duplicates() == {}, "one answer each"
        database = urlsplit(cluster.database)
        store_details = [database.path.strip("/"), str(database.port), str(link.port)]
        for reply in controller.received:
            assert not any(detail in reply.content for detail in store_details), reply.content
    finally:
        await link.close()


async def test_after_a_failover_the_pages_follow_and_old_refs_are_refused(cluster, click_counter):
    """Issue 27 §2: the surviving worker reopens the killed one's tabs, in order, the active
    one active; its first result says the browser moved; a ref from before is refused."""
    settings(cluster, LEASE)
    controllers = await controllers_for_both(cluster, 2)
    first, second = await two_live_workers(cluster)
    names = [first.name, second.name]
    controller = next(c for c in controllers if preferred(c.pubkey, names) == first.name)
    pages = [click_counter.page(f"tab{n}") for n in range(3)]
    steps = [
        {"tool": "open", "params": {"url": pages[0]}},
        {"tool": "tab_new", "params": {"url": pages[1]}},
        {"tool": "tab_new", "params": {"url": pages[2]}},
        {"tool": "tab_switch", "params": {"tab": "t2"}},
    ]
    for step in steps:
        assert (await controller.command(cluster.pubkey, step, timeout=60))["success"], step
    snapshot = await controller.command(cluster.pubkey, {"tool": "snapshot", "params": {}})
    (ref,) = re.findall(r'button "Click" @(e\d+)', snapshot["data"]["snapshot"])
    first.kill()
    request = {"id": secrets.token_hex(6), "tool": "get_url"}
    moved = await controller.command(cluster.pubkey, request, timeout=LEASE + 60)
    assert ran_on(cluster, request["id"]) == [second.name]
    assert moved["success"] and moved["data"]["url"] == pages[1], "the active tab is active"
    assert "moved to another worker" in moved["data"]["moved"], "the first result says so"
    tabs = await controller.command(cluster.pubkey, {"tool": "tab_list"})
    assert [t["url"] for t in tabs["data"]["tabs"]] == pages, "every tab, in order"
    assert all(click_counter.loads[f"tab{n}"] == 2 for n in range(3)), "each reloaded once"
    click = {"tool": "click", "params": {"ref": f"@{ref}"}}
    stale = await controller.command(cluster.pubkey, click, timeout=60)
    assert stale["error"]["code"] == "STALE_REF", stale
    assert "from before this browser moved" in stale["error"]["message"]
    assert click_counter.clicks["tab1"] == 0
    later = await controller.command(cluster.pubkey, {"tool": "get_url"})
    assert "moved" not in later["data"], "said once"


async def test_a_worker_paused_past_its_lease_runs_and_answers_nothing_when_it_wakes(
    cluster, click_counter
):
    """SIGSTOP longer than the lease, then SIGCONT: w2 has taken the controller over and
    answered what w1 held; w1 wakes, runs neither the rest of what it had nor the queued
    click, answers nothing, and the controller's page is on w2."""
    settings(cluster, LEASE)
    controllers = await controllers_for_both(cluster, 2)
    first, second = await two_live_workers(cluster)
    names = [first.name, second.name]
    controller = next(c for c in controllers if preferred(c.pubkey, names) == first.name)
    page = click_counter.page("paused")
    assert (await controller.command(cluster.pubkey, {"tool": "open", "params": {"url": page}}))[
        "success"
    ]
    waited, click = await running_with_a_click_queued(controller, cluster, first, 2000)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        answers = await answered(controller, [waited, click])
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert answers[waited][0]["error"]["code"] == "INTERRUPTED", "w1 was silent for a lease"
    assert answers[click][0]["error"]["code"] == "UNAVAILABLE", "queued: not run"
    async with asyncio.timeout(120):  # w1 wakes, and finds the controller gone
        while "lost the lease of" not in first.tail(10**7):
            await asyncio.sleep(0.2)
    request = {"id": secrets.token_hex(6), "tool": "get_url"}
    read = await controller.command(cluster.pubkey, request, timeout=60)
    assert read["success"] and read["data"]["url"] == page, "its page followed it"
    assert ran_on(cluster, request["id"]) == [second.name]
    assert click_counter.clicks["paused"] == 0, "told it was not run: never run"
    assert await controller.duplicates() == {}, "one answer each"
