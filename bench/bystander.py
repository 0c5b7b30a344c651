"""What a worker costs for a command it does not run (issue 36 §2), apart from the one that runs it.

``python -m bench.bystander [--per-controller N] [--profile STATS]``: one PostgreSQL, two relays
(bench/load.py's), 12 controllers of ``get_url``.  The first worker starts alone and takes every
controller's lease; it runs every command twice over (CPU per command of its process tree),
then a second worker joins, which keeps every controller's wraps aside sealed: two more runs
give both workers' CPU per command.  The first worker's figure alone and with a peer tells
what sharing costs the worker that runs a command; the second's is the whole price of a wrap
seen and not run.  ``--profile`` runs the second worker under cProfile (bench/profiled.py) for
its last run, and prints where its time went, grouped by stage.

``--against SRC`` compares two builds instead: a second bystander runs the package in SRC (a
``src`` directory, e.g. ``git archive main src | tar -x -C /tmp/before``) beside this build's,
both fed the same frames at the same moments, and each run prints both one's CPU per command,
read from ``/proc/<pid>/task/*/schedstat`` (nanoseconds, not /proc's 10 ms ticks), and their
ratio: steady to a few per cent on a machine whose load moves either figure by a third.

``--runner`` measures the worker that runs every command instead, in turns (``--runs`` rounds):
alone, alone with half the controllers sending, and beside a peer that joins and drains
around its run; its Python process and its browser apart, from ``schedstat``.  ``--profile``
then profiles it, each state's last run in its own file.  ``--mixed`` starts two workers that
split the controllers by placement and alternates runs where only the first one's controllers
send (pure runner, pure bystander) with runs where all send (each worker both), to tell
whether doing both costs more than the sum.

The scale-out part (bench/scale.py) splits the controllers among the workers, so every worker
there is both; this one separates the two, which is what a profile needs.
"""

from __future__ import annotations

import argparse
import contextlib
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nostr_sdk as sdk
import psycopg

from tests.fixtures.cluster import CLI, Worker, Workers, process_tree
from tests.fixtures.postgres import fresh_database, postgres_server

from . import load

CONTROLLERS = 12
LEASE = 15.0  # the workers' lease ([state] lease's default)
STAGES = {  # a stage of the bystander's work: (function, file it is in)
    "websocket frames received": ("_read_ready__data_received", "selector_events"),
    "relay frames: JSON, the pool's id and signature check": ("_handle", "connection.py"),
    "  of which the wrap's signature (BIP-340)": ("verify_event", "nip01.py"),
    "inbox: opening the wraps": ("_open_safely", "inbox.py"),
    "  of which the ECDH (conversation key)": ("conversation_key", "nip44.py"),
    "  of which NIP-44 (HMAC, ChaCha20, base64)": ("decrypt", "nip44.py"),
    "inbox: the serving loop": ("serve", "inbox.py"),
    "gate: admit (kept aside)": ("admit", "workers.py"),
    "heartbeat and kept-aside watcher": ("_keep_running", "supervise.py"),
    "  of which PostgreSQL statements": ("_execute", "postgres.py"),
}


def stages(stats_file: str) -> dict[str, float]:
    """Each stage's share of the profiled process's busy time (the loop's waiting left out)."""
    table: dict[Any, Any] = pstats.Stats(stats_file).stats  # type: ignore[attr-defined]
    busy = sum(t for (_, _, name), (_, _, t, _, _) in table.items() if "epoll" not in name)
    shares = {}
    for stage, (function, where) in STAGES.items():
        cumulative = sum(
            c
            for (path, _, name), (_, _, _, c, _) in table.items()
            if name == function and where in path
        )
        shares[stage] = cumulative / busy
    return shares


def run_time(pid: int) -> float:
    """Seconds ``pid``'s live threads have run (the scheduler's own count, in nanoseconds)."""
    threads = Path(f"/proc/{pid}/task").iterdir()
    return sum(int((t / "schedstat").read_text().split()[0]) for t in threads) / 1e9


def _run(
    urls: list[str],
    workers: Workers,
    keys: list[str],
    per: int,
    watch: dict[str, Worker],
    profiled: int | None = None,
) -> dict[str, float]:
    """One run of the generator: CPU ms per command of each watched worker's process tree."""
    trees = {name: process_tree(worker.pid) for name, worker in watch.items()}
    result = load.generate(urls, workers.pubkey, keys, per, trees, profiled)
    answered = result["check"]["ok"]
    assert answered == CONTROLLERS * per and not result["check"]["duplicates"], result["check"]
    return {name: result["cpu"][name] / answered * 1000 for name in watch}


@contextlib.contextmanager
def leased(
    program: list[str] | None = None,
) -> Iterator[tuple[list[str], Workers, list[str], Worker]]:
    """PostgreSQL, two relays and a first worker that took every controller's lease: the
    relays' URLs, the workers, the controllers' secret keys and that first worker."""
    keys = [sdk.Keys.generate() for _ in range(CONTROLLERS)]
    secrets_ = [k.secret_key().to_hex() for k in keys]
    pubkeys = [k.public_key().to_hex() for k in keys]
    with (
        postgres_server() as dsn,
        load.relay() as first,
        load.relay() as second,
        tempfile.TemporaryDirectory(prefix="bench-bystander-") as where,
    ):
        urls = [first[0], second[0]]
        workers = Workers(
            Path(where), urls, fresh_database(dsn), pubkeys, local=False, program=program
        )
        try:
            runner = workers.launch()
            runner.wait_ready()
            load.generate(urls, workers.pubkey, secrets_, 2, {})  # it takes every lease
            yield urls, workers, secrets_, runner
        finally:
            workers.reap()


def measure(per: int, profile: str | None) -> dict[str, list[dict[str, float]]]:
    """Two runs of the first worker alone, then two with the bystander beside it."""
    with leased() as (urls, workers, secrets_, runner):
        alone = [_run(urls, workers, secrets_, per, {"runner": runner}) for _ in range(2)]
        if profile:
            workers.program = [sys.executable, "-m", "bench.profiled", profile]
        bystander = workers.launch()
        bystander.wait_ready()
        time.sleep(2.0)  # it reads the live workers: the leases stay where they are
        load.generate(urls, workers.pubkey, secrets_, 2, {})
        watch = {"runner": runner, "bystander": bystander}
        shared = [_run(urls, workers, secrets_, per, watch) for _ in range(1)]
        shared.append(_run(urls, workers, secrets_, per, watch, bystander.pid if profile else None))
    return {"alone": alone, "shared": shared}


def compare(per: int, runs: int, against: str) -> list[tuple[float, float]]:
    """Each run's µs of CPU per command of this build's bystander and of ``against``'s."""
    pairs = []
    with leased() as (urls, workers, secrets_, _):
        ours, theirs = workers.launch(), workers.launch(env={"PYTHONPATH": against})
        ours.wait_ready()
        theirs.wait_ready()
        time.sleep(2.0)  # they read the live workers: the leases stay where they are
        load.generate(urls, workers.pubkey, secrets_, 2, {})
        for _ in range(runs):
            before = [run_time(w.pid) for w in (ours, theirs)]
            result = load.generate(urls, workers.pubkey, secrets_, per, {})
            answered = result["check"]["ok"]
            assert answered == CONTROLLERS * per and not result["check"]["duplicates"]
            after = [run_time(w.pid) for w in (ours, theirs)]
            mine, other = ((a - b) / answered * 1e6 for a, b in zip(after, before, strict=True))
            pairs.append((mine, other))
    return pairs


def tree_time(pid: int) -> tuple[float, float]:
    """Seconds ``pid`` itself and its descendants (its browser) have run, apart."""
    own, below = run_time(pid), 0.0
    for child in process_tree(pid)[1:]:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            below += run_time(child)
    return own, below


def runner(per: int, rounds: int, profile: str | None) -> list[tuple[str, float, float]]:
    """The worker that runs every command, in turns: alone, alone with half the controllers
    sending (the load a worker of two has), and with a peer that runs none; per run, µs of CPU
    per command of its Python process and of its browser, apart.  The peer joins before each
    shared run and drains after it (the runner reads it gone at its next heartbeat).
    ``profile``: the runner under cProfile, each state's last run written to PROFILE.<state>."""
    runs: list[tuple[str, float, float]] = []
    program = [sys.executable, "-m", "bench.profiled", profile] if profile else None
    with leased(program) as (urls, workers, secrets_, first):

        def timed(state: str, keys: list[str]) -> None:
            before = tree_time(first.pid)
            result = load.generate(
                urls, workers.pubkey, keys, per, {}, first.pid if profile else None
            )
            answered = result["check"]["ok"]
            assert answered == len(keys) * per and not result["check"]["duplicates"]
            after = tree_time(first.pid)
            own, below = ((a - b) / answered * 1e6 for a, b in zip(after, before, strict=True))
            runs.append((state, own, below))
            print(f"{state:6s} runner µs per command: Python {own:.0f}, browser {below:.0f}")
            if profile:  # the worker writes it on the signal: wait for the file
                deadline = time.monotonic() + 30.0
                while not Path(profile).exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                Path(profile).replace(f"{profile}.{state}")

        workers.program = [str(CLI)]
        for _ in range(rounds):
            timed("alone", secrets_)
            timed("half", secrets_[: CONTROLLERS // 2])
            peer = workers.launch()
            peer.wait_ready()
            time.sleep(2.0)  # it reads the live workers: the leases stay where they are
            load.generate(urls, workers.pubkey, secrets_, 2, {})
            timed("shared", secrets_)
            peer.terminate()
            time.sleep(LEASE / 3 + 1.0)  # the runner's next heartbeat reads it gone
    return runs


def mixed(per: int, rounds: int) -> None:
    """Two workers that share the controllers by placement (as the scale-out part's), in
    turns: only the first one's controllers send (it runs every command, the second only sees
    them), then every controller sends (each runs its own and sees the other's).  If a worker
    paid more for running commands while it also sees another's, the second state's CPU per
    command would exceed the first's runner + bystander."""
    keys = [sdk.Keys.generate() for _ in range(CONTROLLERS)]
    secrets_ = [k.secret_key().to_hex() for k in keys]
    pubkeys = [k.public_key().to_hex() for k in keys]
    with (
        postgres_server() as dsn,
        load.relay() as one,
        load.relay() as two,
        tempfile.TemporaryDirectory(prefix="bench-mixed-") as where,
    ):
        urls, database = [one[0], two[0]], fresh_database(dsn)
        workers = Workers(Path(where), urls, database, pubkeys, local=False)
        try:
            pair = [workers.launch(), workers.launch()]
            for worker in pair:
                worker.wait_ready()
            time.sleep(2.0)  # they read each other live: each takes its preferred share
            load.generate(urls, workers.pubkey, secrets_, 2, {})
            with psycopg.connect(database) as db:
                holder = dict(db.execute("SELECT controller, worker FROM lease").fetchall())
            mine = {pk for pk, name in holder.items() if name == pair[0].name}
            first = [k for k, pk in zip(secrets_, pubkeys, strict=True) if pk in mine]
            print(f"the first worker holds {len(first)} of {CONTROLLERS} controllers")
            for _ in range(rounds):
                for state, sending in (("first's", first), ("all", secrets_)):
                    before = [run_time(w.pid) for w in pair]
                    result = load.generate(urls, workers.pubkey, sending, per, {})
                    answered = result["check"]["ok"]
                    assert answered == len(sending) * per and not result["check"]["duplicates"]
                    after = [run_time(w.pid) for w in pair]
                    a, b = ((x - y) / answered * 1e6 for x, y in zip(after, before, strict=True))
                    print(
                        f"{state:8s} µs per command: first {a:.0f}, second {b:.0f},"
                        f" both {a + b:.0f}"
                    )
        finally:
            workers.reap()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-controller", type=int, default=30)
    parser.add_argument("--profile", help="cProfile the bystander's (--runner: runner's) runs")
    parser.add_argument("--against", metavar="SRC", help="a second bystander runs this package")
    parser.add_argument("--runs", type=int, default=6, help="runs (--against), rounds (else)")
    parser.add_argument("--runner", action="store_true", help="the runner, alone and shared")
    parser.add_argument("--mixed", action="store_true", help="two workers sharing the load")
    args = parser.parse_args()
    if args.mixed:
        mixed(args.per_controller, args.runs)
        return
    if args.runner:
        runs = runner(args.per_controller, args.runs, args.profile)
        for state in ("alone", "half", "shared"):
            mine = [(own, below) for s, own, below in runs if s == state]
            print(
                f"{state}: Python median {statistics.median(o for o, _ in mine):.0f} µs,"
                f" browser median {statistics.median(b for _, b in mine):.0f} µs per command"
            )
        return
    if args.against:
        pairs = compare(args.per_controller, args.runs, args.against)
        for mine, other in pairs:
            print(
                f"bystander µs per command: this build {mine:.0f}, the other {other:.0f},"
                f" ratio {mine / other:.3f}"
            )
        ratios = sorted(mine / other for mine, other in pairs)
        print(
            f"this build ÷ {args.against}: median {statistics.median(ratios):.3f}"
            f" ({ratios[0]:.3f}–{ratios[-1]:.3f})"
        )
        return
    figures = measure(args.per_controller, args.profile)
    for run in figures["alone"]:
        print(f"alone:        runner {run['runner']:.2f} ms CPU per command")
    for run in figures["shared"]:
        print(
            f"with a peer:  runner {run['runner']:.2f}, bystander {run['bystander']:.2f}"
            " ms CPU per command"
        )
    if args.profile:
        for stage, share in stages(args.profile).items():
            print(f"  {stage:56s} {share:6.1%}")


if __name__ == "__main__":
    main()
