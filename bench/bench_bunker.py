"""Our bunker's signing rate over loopback, and what it leaves of the workers' commands/s.

1. ``calls``: the relay (``bench.relay_proc``, nostr-sdk's LocalRelay, no rate limit), the
   bunker (``nostr-browserd bunker --reusable-secret``) and a client (this process:
   :class:`BunkerSigner`, as a worker with ``method = "nip46"`` uses it), each a process.  For
   each call a NIP-17 command costs the daemon's key (``nip44_decrypt`` of the wrap and of the
   seal, ``nip44_encrypt`` and ``sign_event`` of the reply's seal) it times ``calls`` calls
   with 1 in flight (the round trip) and with 16 (the rate), median of 3 runs, and the CPU
   seconds each process spent per 1,000 calls.
2. ``workers``: bench/scale.py's deployment (workers of tests/fixtures/cluster.py, one
   PostgreSQL, two relays, bench/load.py's generator) with the identity in the bunker instead
   of a key file, 1 and 3 workers: commands a second, the bunker's calls per command,
   counted from its log (one line per request it answers), and PostgreSQL's writes per
   command (pg_stat_statements' INSERT, UPDATE and DELETE calls and rows, and the WAL bytes
   the server wrote, over the timed window).

Usage: ``.venv/bin/python -m bench.bench_bunker [calls]`` (default 200); prints JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nostr_sdk as sdk
import psycopg

from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.login.files import read_private_file
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.cluster import Workers, process_tree
from tests.fixtures.postgres import fresh_database, postgres_server

from . import load
from .load import cpu_of, module, stop, wait_ready
from .scale import CONTROLLERS, PER_CONTROLLER
from .sites import free_port

RUNS = 3
IN_FLIGHT = (1, 16)


def start_bunker(
    relay: str, workdir: Path, key: Path | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``nostr-browserd bunker`` on ``key`` (default: a new one); returns it and its URL.

    Its log (a line per request answered) goes to ``workdir/bunker.log``.
    """
    url_file = workdir / "url"
    if key is None:
        key = workdir / "key"
        key.write_text(KeySigner.generate().secret.hex())
        key.chmod(0o600)
    entry = "from nostr_browserd.cli.main import main; main()"
    options = ["--reusable-secret", "--url-file", str(url_file), "--perms", "all"]
    bunker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            entry,
            "bunker",
            "--relay",
            relay,
            "--nsec-file",
            str(key),
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=(workdir / "bunker.log").open("w"),
        text=True,
    )
    assert bunker.stdout is not None
    bunker.stdout.readline()  # "the bunker:// URL is in …": serving
    return bunker, read_private_file(url_file)


async def timed(call: Callable[[], Awaitable[object]], calls: int, in_flight: int) -> float:
    """Seconds for ``calls`` calls with ``in_flight`` at a time."""
    queue = iter(range(calls))

    async def lane() -> None:
        for _ in queue:
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(in_flight)))
    return time.perf_counter() - started


async def measure_calls(calls: int) -> dict[str, object]:
    relay_port = free_port()
    relay = module("relay_proc", str(relay_port))
    wait_ready(relay)
    with tempfile.TemporaryDirectory() as tmp:
        bunker, url = start_bunker(f"ws://127.0.0.1:{relay_port}", Path(tmp))
        signer = await BunkerSigner.connect(url, timeout=30)
        try:
            peer = KeySigner.generate()
            me = await signer.public_key()
            sealed = await peer.nip44_encrypt(me, "x" * 600)  # about a command's size
            kinds: dict[str, Callable[[], Awaitable[object]]] = {
                "sign_event": lambda: signer.sign_event({"kind": 13, "content": "x" * 600}),
                "nip44_encrypt": lambda: signer.nip44_encrypt(peer.pubkey, "x" * 600),
                "nip44_decrypt": lambda: signer.nip44_decrypt(peer.pubkey, sealed),
            }
            await timed(kinds["sign_event"], 20, 4)  # warm-up
            results: dict[str, object] = {}
            for name, call in kinds.items():
                for in_flight in IN_FLIGHT:
                    pids = {"bunker": process_tree(bunker.pid), "relay": process_tree(relay.pid)}
                    before = {k: cpu_of(v) for k, v in pids.items()}
                    before["client"] = time.process_time()
                    seconds = [await timed(call, calls, in_flight) for _ in range(RUNS)]
                    spent = {k: cpu_of(v) - before[k] for k, v in pids.items()}
                    spent["client"] = time.process_time() - before["client"]
                    median = statistics.median(seconds)
                    results[f"{name} x{in_flight}"] = {
                        "calls_per_s": round(calls / median, 1),
                        "spread_calls_per_s": [round(calls / s, 1) for s in sorted(seconds)],
                        "ms_per_call": round(median * 1000 / calls, 2),
                        "cpu_s_per_1000": {
                            k: round(v * 1000 / (calls * RUNS), 2) for k, v in spent.items()
                        },
                    }
            return {"calls": calls, "runs": RUNS, "results": results}
        finally:
            await signer.aclose()
            bunker.terminate()
            bunker.wait(20)
            stop(relay)


def bunker_calls(log: Path) -> dict[str, int]:
    """The requests the bunker answered so far, by method (its log has a line for each)."""
    counts: dict[str, int] = {}
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("INFO ") and "bunker: " in line and " from " in line:
            method = line.split("bunker: ", 1)[1].split(" ", 1)[0]
            counts[method] = counts.get(method, 0) + 1
    return counts


class DatabaseWrites(contextlib.AbstractContextManager["DatabaseWrites"]):
    """What the database wrote while in the block: write statements, rows, WAL bytes."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.start = ""
        self.statements: dict[str, int] = {}
        self.wal_bytes = 0

    def __enter__(self) -> DatabaseWrites:
        with psycopg.connect(self.database, autocommit=True) as db:
            db.execute("SELECT pg_stat_statements_reset()")
            self.start = db.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        return self

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.database, autocommit=True) as db:
            self.wal_bytes = int(
                db.execute(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", (self.start,)
                ).fetchone()[0]
            )
            rows = db.execute(
                "SELECT split_part(ltrim(query), ' ', 1), sum(calls), sum(rows)"
                " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database"
                " WHERE datname = current_database()) GROUP BY 1"
            ).fetchall()
        for verb, calls, affected in rows:
            if verb.upper() in ("INSERT", "UPDATE", "DELETE"):
                self.statements[verb.upper()] = int(calls)
                self.statements[verb.upper() + "_rows"] = int(affected)

    def per_command(self, commands: int) -> dict[str, float]:
        n = max(commands, 1)
        out = {k: round(v / n, 2) for k, v in self.statements.items()}
        out["wal_bytes"] = round(self.wal_bytes / n)
        return out


def through_the_bunker(levels: tuple[int, ...] = (1, 3)) -> list[dict[str, Any]]:
    """Commands a second of 1 and 3 workers whose identity is in one bunker."""
    keys = [sdk.Keys.generate() for _ in range(CONTROLLERS)]
    secrets_ = [k.secret_key().to_hex() for k in keys]
    pubkeys = [k.public_key().to_hex() for k in keys]
    rows = []
    with (
        postgres_server() as dsn,
        load.relay() as first,
        load.relay() as second,
        tempfile.TemporaryDirectory(prefix="bench-bunker-") as where,
    ):
        urls = [first[0], second[0]]
        for n in levels:
            root = Path(where) / f"{n}-workers"
            database = fresh_database(dsn)
            with psycopg.connect(database, autocommit=True) as db:
                db.execute("CREATE EXTENSION pg_stat_statements")
            workers = Workers(root, urls, database, pubkeys, local=False)
            bunker, _ = start_bunker(urls[0], root, workers.identity_file)
            workers.settings = {
                "identity": {"method": "nip46", "bunker_url_file": str(root / "url")}
            }
            try:
                started = [workers.launch() for _ in range(n)]
                for worker in started:
                    worker.wait_ready()
                load.generate(urls, workers.pubkey, secrets_, 2, {})  # warm-up
                watch = {
                    "workers": [p for w in started for p in process_tree(w.pid)],
                    "bunker": [bunker.pid],
                }
                before = bunker_calls(root / "bunker.log")
                writes = DatabaseWrites(database)
                result = load.generate(
                    urls, workers.pubkey, secrets_, PER_CONTROLLER, watch, window=writes
                )
                after = bunker_calls(root / "bunker.log")
                row = load.summary("daemon", CONTROLLERS, result)
                answered = max(row["answered"], 1)
                row |= {
                    "workers": n,
                    "bunker_calls_per_command": {
                        m: round((after[m] - before.get(m, 0)) / answered, 2) for m in after
                    },
                    "database_writes": writes.per_command(answered),
                }
                rows.append(row)
                print(
                    f"  {n} worker(s) via the bunker: {row['throughput']:.1f}/s, p50 "
                    f"{row['p50_ms']:.0f} ms, calls/command {row['bunker_calls_per_command']}, "
                    f"writes/command {row['database_writes']}",
                    file=sys.stderr,
                    flush=True,
                )
            finally:
                workers.reap()
                bunker.terminate()
                bunker.wait(20)
    return rows


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    results = {"calls": asyncio.run(measure_calls(calls)), "workers": through_the_bunker()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
