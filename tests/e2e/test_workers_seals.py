"""What a command costs the workers that do not run it (issue 36 §2), on the real harness
(tests/fixtures/cluster.py): three ``nostr-browserd run`` processes, PostgreSQL, two relays,
nostr-sdk controllers.  Each worker counts, on its status page, the gift wraps it decrypted
(the first decryption, which names the sender) and the seals it opened (the signature check
and the second decryption).

- in the steady state every worker decrypts each wrap once, and the seal is opened once, by
  the worker that runs the command; each command is claimed in one statement and answered
  once;
- a worker killed while its controller's wraps wait: the worker that takes the controller over
  opens them (nobody else does) and answers each once, in order;
- an approver whose own commands another worker runs: its ``approve`` still reaches the
  worker whose command waits for it (that one opens every seal while it waits).
"""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Any

import pytest

from nostr_browserd.daemon.placement import preferred
from tests.e2e.test_workers import answered, pipeline, ran_on, until_status
from tests.e2e.test_workers_statements import CLAIM, calls, counting
from tests.fixtures.cluster import Cluster, ClusterController, Worker

pytestmark = pytest.mark.timeout(300)

NAMES = ["w1", "w2", "w3"]
LEASE = 6.0  # seconds: short, so that a dead worker's controller moves on within the test


async def preferring_each(cluster: Cluster, n: int) -> list[ClusterController]:
    """``n`` controllers or more, until each of the three workers is preferred by one."""
    made = await cluster.controllers(n)
    while {preferred(c.pubkey, NAMES) for c in made} != set(NAMES):
        made += await cluster.controllers(1)
    return made


async def three_live_workers(cluster: Cluster, lease: float) -> list[Worker]:
    """Three workers, each knowing the other two (the seal decision reads no store)."""
    cluster.workers.settings = {"state": {"lease": lease}, "browser": {"queue_size": 32}}
    workers = await cluster.start_many(3)
    for worker in workers:
        await until_status(worker, lambda s: s["live"] == NAMES)
    return workers


def opened(workers: list[Worker]) -> dict[str, dict[str, int]]:
    """Each worker's count of gift wraps decrypted and seals opened, by its name."""
    counts = {}
    for worker in workers:
        inbox = worker.status()["inbox"]
        counts[worker.name] = {"wraps": inbox["wraps_opened"], "seals": inbox["seals_opened"]}
    return counts


def since(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict:
    return {w: {k: after[w][k] - before[w][k] for k in after[w]} for w in after}


async def get_urls(controller: ClusterController, daemon: str, n: int) -> list[str]:
    """``n`` ``get_url``, one after the other, each answered; their request ids."""
    ids = []
    for _ in range(n):
        request: dict[str, Any] = {"id": secrets.token_hex(6), "tool": "get_url"}
        answer = await controller.command(daemon, request, timeout=60)
        assert answer["success"], answer
        ids.append(request["id"])
    return ids


async def test_each_seal_is_opened_once_by_the_worker_that_runs_its_command(cluster):
    controllers = await preferring_each(cluster, 4)
    workers = await three_live_workers(cluster, lease=15.0)
    await asyncio.gather(*(get_urls(c, cluster.pubkey, 1) for c in controllers))  # placed
    before = await asyncio.to_thread(opened, workers)
    counting(cluster.database)
    sent = await asyncio.gather(*(get_urls(c, cluster.pubkey, 4) for c in controllers))
    commands = [i for ids in sent for i in ids]
    claims = calls(cluster.database, CLAIM)
    rejected = calls(cluster.database, "INSERT INTO rejected")
    spent = since(before, await asyncio.to_thread(opened, workers))
    for controller in controllers:
        assert await controller.duplicates() == {}
    assert claims == len(commands), "each command claimed in one statement, by one worker"
    assert rejected == 0, "a sealed wrap is never taken for a stranger's"
    ran = {w.name: sum(ran_on(cluster, r) == [w.name] for r in commands) for w in workers}
    assert sum(ran.values()) == len(commands), ran
    for name, counts in spent.items():
        assert counts["wraps"] == len(commands), ("each wrap decrypted once here", name, spent)
        assert counts["seals"] == ran[name], ("a seal opened only where it ran", name, spent)


async def test_a_killed_workers_waiting_wraps_are_opened_by_the_one_that_takes_over(cluster):
    controllers = await preferring_each(cluster, 3)
    victim = next(c for c in controllers if preferred(c.pubkey, NAMES) == "w1")
    workers = await three_live_workers(cluster, lease=LEASE)
    first, survivors = workers[0], workers[1:]
    [placed] = await get_urls(victim, cluster.pubkey, 1)
    assert ran_on(cluster, placed) == [first.name]
    before = await asyncio.to_thread(opened, survivors)
    first.kill()
    waiting = await pipeline(victim, cluster.pubkey, [{"tool": "get_url"}] * 3)
    answers = await answered(victim, waiting)
    assert all(answers[i][0]["success"] for i in waiting), answers
    assert await victim.duplicates() == {}
    [taker] = {w for i in waiting for w in ran_on(cluster, i)}
    spent = since(before, await asyncio.to_thread(opened, survivors))
    assert spent[taker]["seals"] == len(waiting), ("opened where they ran", spent)
    assert sum(s["seals"] for s in spent.values()) == len(waiting), ("by nobody else", spent)


async def test_an_approval_reaches_the_waiting_worker_from_an_approver_served_elsewhere(
    cluster, click_counter
):
    """The agent's commands run on w1, its approver's on w2: w1 cannot tell the approver's
    ``approve`` from its other commands before opening the seal, so it opens them all while
    a command of its own waits for an approval."""
    two = ["w1", "w2"]
    agent, phone = await cluster.controllers(2)
    while preferred(agent.pubkey, two) != "w1" or preferred(phone.pubkey, two) != "w2":
        agent, phone = await cluster.controllers(2)
    cluster.workers.controllers.remove(agent.pubkey)  # listed once: with its approver
    cluster.workers.settings = {
        "state": {"lease": 15.0},
        "controllers": [{"pubkey": agent.npub, "name": "agent", "approver": phone.npub}],
    }
    workers = await cluster.start_many(2)
    for worker in workers:
        await until_status(worker, lambda s: s["live"] == two)
    await get_urls(phone, cluster.pubkey, 1)  # the approver's own commands: on w2
    opening = asyncio.create_task(
        agent.command(
            cluster.pubkey,
            {"tool": "open", "params": {"url": click_counter.page("gated")}},
            timeout=60,
        )
    )
    asked = await phone.wait_reply(
        lambda r: r.sender == cluster.pubkey and "approve" in r.content, timeout=60
    )
    code = re.search(r'"approve ([A-Z0-9]+)"', asked.content)
    assert code is not None, asked.content
    await phone.send(cluster.pubkey, f"approve {code[1]}")
    assert (await opening)["success"], "approved by the approver, on the worker that waited"
    assert click_counter.loads["gated"] == 1
