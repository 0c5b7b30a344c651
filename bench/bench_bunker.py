"""Our bunker's signing rate over loopback: the calls a second one ``nostr-browserd bunker``
answers to a worker.

Three processes, as in the reference deployment: the relay (``bench.relay_proc``, nostr-sdk's
LocalRelay, no rate limit), the bunker (``nostr-browserd bunker --reusable-secret``) and the
client (this process: :class:`BunkerSigner`, as a worker logged in with ``method = "nip46"``).
For each call a NIP-17 command costs the daemon's key (``nip44_decrypt`` of the wrap and of the
seal, ``nip44_encrypt`` and ``sign_event`` of the reply's seal) it times ``calls`` calls with 1
in flight (the round trip) and with 16 (the rate), median of 3 runs, and the CPU seconds each
process spent per 1,000 calls.

Usage: ``.venv/bin/python -m bench.bench_bunker [calls]`` (default 200); prints JSON.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.login.files import read_private_file
from nostr_browserd.nostr.signer import KeySigner

from .load import cpu_of, module, stop, tree, wait_ready
from .sites import free_port

RUNS = 3
IN_FLIGHT = (1, 16)


def start_bunker(relay: str, workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """``nostr-browserd bunker`` on a new key; returns it and the URL it wrote."""
    key, url_file = workdir / "key", workdir / "url"
    key.write_text(KeySigner.generate().secret.hex())
    key.chmod(0o600)
    entry = "from nostr_browserd.daemon.cli import main; main()"
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
        stderr=subprocess.DEVNULL,
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


async def measure(calls: int) -> dict[str, object]:
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
                    pids = {"bunker": tree(bunker.pid), "relay": tree(relay.pid)}
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


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(json.dumps(asyncio.run(measure(calls)), indent=2))


if __name__ == "__main__":
    main()
