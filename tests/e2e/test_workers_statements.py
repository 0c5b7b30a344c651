"""What a command costs the store with workers sharing an identity (issue 24 §4), as PostgreSQL
itself counts it (``pg_stat_statements``), on the real harness (tests/fixtures/cluster.py):
``nostr-browserd run`` processes, two relays, nostr-sdk controllers.

- a live wrap is claimed with no look-up before it (the claim is the replay guard's one
  statement), and a wrap the relays had stored while no worker ran is looked up first;
- a worker preferred by a controller that another live worker holds asks for its lease once,
  not for each of its wraps.
"""

from __future__ import annotations

import asyncio
import secrets

import psycopg
import pytest

from nostr_browserd.daemon.placement import preferred
from tests.fixtures.cluster import ClusterController

pytestmark = pytest.mark.timeout(300)

LOOKUP = "FROM seen WHERE id = ANY"  # Store.known: processed or rejected before?
CLAIM = "INSERT INTO seen"
LEASE_ASK = "INSERT INTO lease"  # Store.take_lease
COMMANDS = 6


def counting(database: str) -> None:
    """Count this database's statements from now on."""
    with psycopg.connect(database, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        db.execute(
            "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database"
            " WHERE datname = current_database()), 0)"
        )


def calls(database: str, fragment: str) -> int:
    """How many statements containing ``fragment`` this database ran since :func:`counting`."""
    with psycopg.connect(database, autocommit=True) as db:
        row = db.execute(
            "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements WHERE dbid ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query LIKE %s",
            (f"%{fragment}%",),
        ).fetchone()
    return int(row[0])


async def commands(controller: ClusterController, daemon: str, n: int) -> list[str]:
    """``n`` commands, one after the other, each answered; their request ids.

    Each id is new: the same request sent again within the same second is the same rumor
    (same author, second and content, so the same id), which the replay guard ignores.
    """
    ids = []
    batch = secrets.token_hex(3)
    for i in range(n):
        request = {"id": f"{batch}-{i}", "tool": "get_url"}
        answer = await controller.command(daemon, request, timeout=60)
        assert answer["success"], answer
        ids.append(answer["id"])
    return ids


async def test_a_live_wrap_is_claimed_without_a_look_up_and_a_stored_one_is_looked_up(cluster):
    [controller] = await cluster.controllers(1)
    counting(cluster.database)
    stored = await controller.send(cluster.pubkey, '{"id": "stored", "tool": "get_url"}')
    worker = await cluster.start()
    async with asyncio.timeout(60):
        while "stored" not in await controller.answers():
            await asyncio.sleep(0.2)
    assert calls(cluster.database, LOOKUP) >= 1, f"{stored[:12]}: the relays had it stored"
    counting(cluster.database)
    await commands(controller, cluster.pubkey, COMMANDS)
    assert calls(cluster.database, LOOKUP) == 0, "a live wrap: nothing to look up"
    assert calls(cluster.database, CLAIM) == COMMANDS, "each claimed, in one statement"
    assert await controller.duplicates() == {}
    status = await asyncio.to_thread(worker.status)
    assert status["inbox"]["checked_in_store"] == 1, "the stored wrap alone"


async def test_a_worker_asks_once_for_the_lease_of_a_controller_another_worker_holds(cluster):
    # A third of this lease (the longest a refusal is trusted, and a held lease is fresh)
    # outlasts the test: every lease write in it is one of the two below.
    cluster.workers.settings = {"state": {"lease": 600.0}}
    made = await cluster.controllers(1)
    while preferred(made[-1].pubkey, ["w1", "w2"]) != "w2":
        made += await cluster.controllers(1)
    controller = made[-1]
    first = await cluster.start()
    await commands(controller, cluster.pubkey, 1)  # w1, alone, takes its lease
    second = await cluster.start()
    async with asyncio.timeout(60):  # w2 knows w1: it prefers itself for the controller
        while (await asyncio.to_thread(second.status))["live"] != ["w1", "w2"]:
            await asyncio.sleep(0.2)
    counting(cluster.database)
    ids = await commands(controller, cluster.pubkey, COMMANDS)
    log = first.tail(10**7)
    assert all(f"command {i} " in log for i in ids), "w1 holds the controller: it ran them all"
    assert calls(cluster.database, LEASE_ASK) == 1, "w2 asked once, and was refused"
    assert calls(cluster.database, CLAIM) == COMMANDS
