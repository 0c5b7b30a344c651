"""Throughput and latency under load: the daemon against the minimal responder, same generator.

Four kinds of process, each on its own: the relay (LocalRelay), the system under test (the
real daemon, ``nostr-browserd run``; or the minimal responder on nostr-sdk), and the load
generator (pre-signed wraps).  The CPU seconds of each side are read from /proc around the
generator's timed window and reported per 1,000 commands.  The echo (bench/echo.py, replies
built in advance, no crypto) is the generator's own floor, measured in the same run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nostr_sdk as sdk

from tests.fixtures.cluster import Workers, process_tree

from .sites import free_port

TICK = os.sysconf("SC_CLK_TCK")
MAX_CONTROLLERS = 50


def cpu_of(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def module(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -m bench.NAME`` with pipes, waiting for its ``ready`` line."""
    return subprocess.Popen(
        [sys.executable, "-m", f"bench.{name}", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )


def wait_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"{process.args} did not start: {line!r}")


def stop(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(20)


@contextlib.contextmanager
def relay() -> Iterator[tuple[str, int]]:
    port = free_port()
    process = module("relay_proc", str(port))
    try:
        wait_ready(process)
        yield f"ws://127.0.0.1:{port}", process.pid
    finally:
        stop(process)


@contextlib.contextmanager
def responder(url: str) -> Iterator[tuple[str, list[int]]]:
    keys = sdk.Keys.generate()
    process = module("responder", url)
    assert process.stdin is not None
    process.stdin.write(keys.secret_key().to_hex() + "\n")
    process.stdin.flush()
    try:
        wait_ready(process)
        yield keys.public_key().to_hex(), [process.pid]
    finally:
        stop(process)


@contextlib.contextmanager
def daemon(url: str, controllers: list[str], profile: str | None) -> Iterator[tuple[str, int]]:
    """The real daemon, ``nostr-browserd run``, allowing ``controllers``; its pubkey and pid.

    With ``profile`` it runs under cProfile (bench/profiled.py), which SIGUSR1 and SIGUSR2
    switch on and off around a timed window; the statistics are left in that file.
    """
    program = [sys.executable, "-m", "bench.profiled", profile] if profile else None
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as root:
        workers = Workers(Path(root), [url], None, controllers, local=False, program=program)
        try:
            worker = workers.launch()
            worker.wait_ready()
            yield workers.pubkey, worker.pid
        finally:
            workers.reap()


def generate(
    relays: list[str],
    target: str,
    keys: list[str],
    per_controller: int,
    watch: dict[str, list[int]],
    profiled: int | None = None,
    *,
    request: tuple[str, dict[str, Any]] = ("get_url", {}),
    window: contextlib.AbstractContextManager[Any] | None = None,
    echo: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One run of the generator; CPU seconds of each watched side over its timed window.

    ``profiled``: the pid of a daemon under bench/profiled.py, profiled for that window.
    ``request``: the tool and params every command asks for.  ``window``: entered just
    before the first command leaves and left once the last reply is in.  ``echo``: the
    generator also writes the echo's table (see bench/loadgen.py).
    """
    process = module("loadgen")
    assert process.stdin is not None and process.stdout is not None
    config = {
        "relays": relays,
        "target": target,
        "keys": keys,
        "per_controller": per_controller,
        "tool": request[0],
        "params": request[1],
        **({"echo": echo} if echo else {}),
    }
    process.stdin.write(json.dumps(config) + "\n")
    process.stdin.flush()
    wait_ready(process)
    with window or contextlib.nullcontext():
        before = {side: cpu_of(pids) for side, pids in watch.items()}
        if profiled:
            os.kill(profiled, signal.SIGUSR1)
        process.stdin.write("go\n")
        process.stdin.flush()
        result = json.loads(process.stdout.readline())
        if profiled:
            os.kill(profiled, signal.SIGUSR2)
        after = {side: cpu_of(pids) for side, pids in watch.items()}
    stop(process)
    result["cpu"] = {side: after[side] - before[side] for side in watch}
    result["cpu"]["generator"] = result.pop("cpu_s")
    return result


def echo_run(url: str, keys: list[str], commands: int, relay_pid: int) -> dict[str, Any]:
    """One run of the generator against the echo, which starts once the table is written."""
    echo_keys = sdk.Keys.generate()
    pubkey = echo_keys.public_key().to_hex()
    watch: dict[str, list[int]] = {"relay": [relay_pid]}
    with tempfile.TemporaryDirectory(prefix="bench-echo-") as where:
        table = str(Path(where) / "table.json")

        @contextlib.contextmanager
        def serving() -> Iterator[None]:
            process = module("echo", url, table, pubkey)
            try:
                wait_ready(process)
                watch["echo"] = [process.pid]
                yield
            finally:
                stop(process)

        echo = {"secret": echo_keys.secret_key().to_hex(), "table": table}
        return generate([url], pubkey, keys, commands, watch, window=serving(), echo=echo)


def per_controller(n: int) -> int:
    """Commands per controller: a window of a second or more for the daemon, so that a moment
    of the shared machine's contention, or the first round's start, is a small part of it."""
    return {1: 300, 10: 60}.get(n, max(8, 600 // n))


def summary(system: str, n: int, result: dict[str, Any]) -> dict[str, Any]:
    ms = sorted(result.pop("latencies_ms"))
    answered = result["answered"]
    return {
        "system": system,
        "controllers": n,
        "throughput": answered / result["seconds"],
        "p50_ms": statistics.median(ms) if ms else None,
        "p95_ms": ms[int(len(ms) * 0.95)] if ms else None,
        "cpu_per_1000": {k: v * 1000 / max(answered, 1) for k, v in result["cpu"].items()},
        **result,
    }


def load(
    levels: list[int],
    reps: int,
    profile: str | None = None,
    systems: tuple[str, ...] = ("echo", "minimal responder", "daemon"),
) -> list[dict[str, Any]]:
    """Each level, ``reps`` times, alternating the echo, the minimal responder and the daemon."""
    controllers = [sdk.Keys.generate() for _ in range(MAX_CONTROLLERS)]
    secrets_ = [k.secret_key().to_hex() for k in controllers]
    pubkeys = [k.public_key().to_hex() for k in controllers]
    rows = []
    with (
        relay() as (url, relay_pid),
        responder(url) as (minimal, minimal_pids),
        daemon(url, pubkeys, profile) as (ours, daemon_pid),
    ):
        daemon_pids = process_tree(daemon_pid)
        sides = {
            "minimal responder": (minimal, {"responder": minimal_pids}),
            "daemon": (ours, {"daemon": [daemon_pid], "browser": daemon_pids[1:]}),
        }
        sides = {k: v for k, v in sides.items() if k in systems}
        for target, _ in sides.values():  # warm-up: every context made
            generate([url], target, secrets_, 2, {})
        daemon_pids = process_tree(daemon_pid)
        if "daemon" in sides:
            sides["daemon"][1]["browser"] = [p for p in daemon_pids if p != daemon_pid]
        for _ in range(reps):
            for n in levels:
                if "echo" in systems:
                    result = echo_run(url, secrets_[:n], per_controller(n), relay_pid)
                    rows.append(summary("echo", n, result))
                    report_row(rows[-1], result)
                for system, (target, watch) in sides.items():
                    result = generate(
                        [url],
                        target,
                        secrets_[:n],
                        per_controller(n) * (2 if profile else 1),
                        {**watch, "relay": [relay_pid]},
                        profiled=daemon_pid if profile and system == "daemon" else None,
                    )
                    rows.append(summary(system, n, result))
                    report_row(rows[-1], result)
    return rows


def report_row(row: dict[str, Any], result: dict[str, Any]) -> None:
    print(
        f"  {row['system']:18} {row['controllers']:3} controllers: "
        f"{row['throughput']:6.1f}/s p50 {row['p50_ms']:.1f} ms check {result['check']}",
        flush=True,
    )


if __name__ == "__main__":
    load([1, 10, 50], 1)
