"""Several workers, one identity (issue 13 §2), on the real harness (tests/fixtures/cluster.py):
PostgreSQL, two relays, ``nostr-browserd run`` processes, nostr-sdk controllers, a counter page
that counts loads and clicks on its server.

- exactly once: every command runs once and is answered once, in each controller's order,
  and both workers take their share;
- a worker killed (``kill -9``) while its controllers are busy: within the lease plus 5 s the
  other worker answers their next commands, logged in as they were, and what the dead one
  held (interrupted, not run);
- a worker drained (SIGTERM) in the middle of its controllers' commands: nothing is lost, and
  the other worker carries on with their login.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest

from nostr_browserd.daemon.workers import preferred
from tests.fixtures.cluster import Cluster, ClusterController, Worker

pytestmark = pytest.mark.timeout(300)

LEASE = 6.0  # seconds: short, so that a dead worker's controllers move on within the test


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


async def two_live_workers(cluster: Cluster) -> tuple[Worker, Worker]:
    """Start two workers and wait until each knows the other (its next heartbeat)."""
    first, second = await cluster.start_many(2)
    for worker in (first, second):
        await until_status(worker, lambda s: s["live"] == [first.name, second.name])
    return first, second


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
