"""bench/scale.py counts the commands each worker ran from the line the worker logs for it."""

import logging
import time

import pytest

from bench import scale
from nostr_browserd.commands.protocol import Request
from nostr_browserd.daemon.delivery import Delivery
from nostr_browserd.daemon.store import SqliteStore


async def test_each_audited_command_of_the_run_is_counted_once(tmp_path, caplog) -> None:
    store = SqliteStore(tmp_path / "state.sqlite3")
    delivery = Delivery(store, reply=None, send=None, result_cap=10_000)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO)
    for run, n in (("1a2b3c4d", 0), ("1a2b3c4d", 1), ("99887766", 0)):
        request = Request(id=f"{run}-3-{n}", tool="get_url")
        response = {"id": request.id, "success": True, "result": "about:blank"}
        await delivery.audit("ab" * 32, "nip17", request, response, time.perf_counter())
    await store.close()
    log = "\n".join(f"INFO {r.name}: {r.getMessage()}" for r in caplog.records)
    assert scale.served(log, "1a2b3c4d") == 2
    assert scale.served(log, "99887766") == 1


@pytest.mark.parametrize("line", ["INFO x: a command from ab via nip17", "1a2b3c4d-0-0"])
def test_other_lines_are_not_counted(line: str) -> None:
    assert scale.served(line, "1a2b3c4d") == 0
