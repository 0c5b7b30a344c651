"""Scale-out: commands a second with 1, 2 and 3 workers sharing one identity and one PostgreSQL,
what each command costs the database, and how many contexts holding a page fit in a GB.

The workers are the tests' (tests/fixtures/cluster.py: ``nostr-browserd run``, one identity
file, one database, both relays); the relays and the load generator are bench/load.py's, each
in its own process.  Each level gets a fresh database with ``pg_stat_statements``, reset when
the timed window opens: the statements and their time in the server over the window, divided
by the commands answered, are the per-command database cost (the workers' background work
included: heartbeats, leases, pruning).
"""

from __future__ import annotations

import contextlib
import functools
import re
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nostr_sdk as sdk
import psycopg

from tests.fixtures.cluster import Worker, Workers, process_tree
from tests.fixtures.postgres import fresh_database, postgres_server
from tests.fixtures.site import SITE, QuietHandler, serving

from . import load, sites
from .browser_bench import browser_pss_mb

LEVELS = (1, 2, 3)
CONTROLLERS = 12  # each a closed loop: its next command leaves when its reply is in
PER_CONTROLLER = 40  # a window of about a second at 1 worker: /proc counts CPU in 10 ms ticks
CONTEXTS = (0, 1, 4, 8, 16)  # contexts holding a page, for the memory figure


class DatabaseCost(contextlib.AbstractContextManager["DatabaseCost"]):
    """The statements one database ran while in the block: how many, and their time in it."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.statements: list[tuple[str, int, float]] = []  # (query, calls, ms)

    def __enter__(self) -> DatabaseCost:
        with psycopg.connect(self.database, autocommit=True) as db:
            db.execute("SELECT pg_stat_statements_reset()")
        return self

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.database, autocommit=True) as db:
            rows = db.execute(
                "SELECT query, calls, total_exec_time FROM pg_stat_statements"
                " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC"
            ).fetchall()
        self.statements = [(re.sub(r"\s+", " ", q)[:90], int(c), float(ms)) for q, c, ms in rows]

    def per_command(self, commands: int) -> dict[str, Any]:
        n = max(commands, 1)
        return {
            "statements": sum(c for _, c, _ in self.statements) / n,
            "ms": sum(ms for _, _, ms in self.statements) / n,
            "top": [
                {"query": q, "per_command": c / n, "ms_per_command": ms / n}
                for q, c, ms in self.statements[:6]
            ],
        }


def _postgres_pids(database: str) -> list[int]:
    """The server's processes: the postmaster (our backend's parent) and its children."""
    with psycopg.connect(database) as db:  # read while connected: the backend ends with it
        backend = db.execute("SELECT pg_backend_pid()").fetchone()[0]
        parent = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return process_tree(parent)


def served(log: str, run: str) -> int:
    """How many commands of the generator's run ``run`` a worker's ``log`` says it answered:
    the audit's line for each (``command <request id> from …``, logged at INFO, the level
    the workers run at), whichever module logs it.  The generator's request ids are
    ``<run>-<controller>-<n>``."""
    return len(re.findall(rf" command {re.escape(run)}-\S+ from ", log))


def _served(workers: list[Worker], run: str, answered: int) -> list[int]:
    """How many of the generator's run ``run`` each worker answered.  They must add up to the
    ``answered`` the generator counted (a log line that changed would show 0 everywhere); a
    worker writes its line just after the reply left, so the last ones may take a moment."""
    deadline = time.monotonic() + 10.0
    while True:
        counts = [served(w.log.read_text(errors="replace"), run) for w in workers]
        if sum(counts) == answered:
            return counts
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers' logs show {counts} commands of {answered} answered")
        time.sleep(0.1)


@contextlib.contextmanager
def deployment(
    root: Path, relays: list[str], database: str | None, controllers: list[str], n: int
) -> Iterator[tuple[Workers, list[Worker]]]:
    """``n`` workers of one identity, ready; all stopped on the way out."""
    workers = Workers(root, relays, database, controllers, local=False)
    try:
        started = [workers.launch() for _ in range(n)]
        for worker in started:
            worker.wait_ready()
        yield workers, started
    finally:
        workers.reap()


def throughput(
    root: Path, relays: list[tuple[str, int]], dsn: str, keys: list[sdk.Keys], reps: int
) -> list[dict[str, Any]]:
    """``reps`` rounds, each timing every level of workers once, the levels in turn (reversed
    every other round), each on a fresh database after a warm-up: the machine's drift falls
    on every level of a round alike, and the ratios are taken round by round."""
    secrets_ = [k.secret_key().to_hex() for k in keys]
    pubkeys = [k.public_key().to_hex() for k in keys]
    return [
        _level(root / f"{rep}-{n}-workers", relays, dsn, pubkeys, secrets_, n) | {"rep": rep}
        for rep in range(reps)
        for n in (LEVELS if rep % 2 == 0 else LEVELS[::-1])
    ]


def _level(
    root: Path,
    relays: list[tuple[str, int]],
    dsn: str,
    pubkeys: list[str],
    secrets_: list[str],
    n: int,
) -> dict[str, Any]:
    """One timed run of ``n`` workers on a fresh database, after a warm-up."""
    urls = [url for url, _ in relays]
    database = fresh_database(dsn)
    with psycopg.connect(database, autocommit=True) as db:
        db.execute("CREATE EXTENSION pg_stat_statements")
    with deployment(root, urls, database, pubkeys, n) as (workers, started):
        load.generate(urls, workers.pubkey, secrets_, 2, {})  # warm-up: contexts, leases
        watch = {
            "workers": [p for w in started for p in process_tree(w.pid)],
            "postgres": _postgres_pids(database),
            "relays": [pid for _, pid in relays],
        }
        cost = DatabaseCost(database)
        result = load.generate(urls, workers.pubkey, secrets_, PER_CONTROLLER, watch, window=cost)
        row = load.summary("daemon", CONTROLLERS, result)
        row |= {
            "workers": n,
            "database": cost.per_command(row["answered"]),
            "served": _served(started, result["run"], row["answered"]),
        }
    print(
        f"  {n} worker(s): {row['throughput']:6.1f}/s p50 {row['p50_ms']:.0f} ms, "
        f"{row['database']['statements']:.1f} statements "
        f"{row['database']['ms']:.2f} ms/command, served {row['served']}, "
        f"workers' CPU {row['cpu_per_1000']['workers']:.2f} ms/command, "
        f"check {result['check']}",
        flush=True,
    )
    return row


def _slope(points: list[tuple[int, float]]) -> float:
    """Least squares: MB per context."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)


def contexts(
    root: Path, relays: list[str], dsn: str, keys: list[sdk.Keys], pages: dict[str, str]
) -> list[dict[str, Any]]:
    """PSS of one worker's Chromium with K contexts, each holding ``page`` (one controller
    each, opened over DMs), for every page; MB per context and contexts per GB."""
    secrets_ = [k.secret_key().to_hex() for k in keys]
    pubkeys = [k.public_key().to_hex() for k in keys]
    rows = []
    for name, url in pages.items():
        database = fresh_database(dsn)
        with deployment(root / f"memory-{name}", relays, database, pubkeys, 1) as (workers, [w]):
            points, opened = [], 0
            for k in CONTEXTS:
                if k > opened:
                    result = load.generate(
                        relays,
                        workers.pubkey,
                        secrets_[opened:k],
                        1,
                        {},
                        request=("open", {"url": url}),
                    )
                    assert result["check"]["ok"] == k - opened, result["check"]
                    opened = k
                time.sleep(1.0)  # let the renderers settle
                points.append((k, browser_pss_mb(w.pid)))
        per_context = _slope(points)
        rows.append(
            {
                "page": name,
                "pss_mb": dict(points),
                "mb_per_context": per_context,
                "contexts_per_gb": 1024 / per_context,
            }
        )
        print(f"  {name}: {per_context:.1f} MB per context, {1024 / per_context:.0f} per GB")
    return rows


def run(reps: int) -> dict[str, Any]:
    """The levels (1, 2, 3 workers) and the memory figure, on one PostgreSQL and two relays."""
    keys = [sdk.Keys.generate() for _ in range(max(CONTROLLERS, *CONTEXTS))]
    with (
        postgres_server() as dsn,
        load.relay() as first,
        load.relay() as second,
        tempfile.TemporaryDirectory(prefix="bench-scale-") as where,
        sites.docs() as docs,
        serving(functools.partial(QuietHandler, directory=str(SITE))) as site,
    ):
        results = {
            "controllers": CONTROLLERS,
            "per_controller": PER_CONTROLLER,
            "levels": throughput(Path(where), [first, second], dsn, keys[:CONTROLLERS], reps),
        }
        pages = {
            "tests/site/index.html": f"{site}/index.html",
            "python docs controlflow": docs + sites.DOC_PAGES["controlflow"],
        }
        relays = [first[0], second[0]]
        results["contexts"] = contexts(Path(where), relays, dsn, keys, pages)
    return results


if __name__ == "__main__":
    print(run(1))
