"""What sealing a saved state costs (issue 33 §7): a save and a load, sealed and in plaintext.

On a SQLite store in a temporary directory, with the daemon's key in the process (KeySigner),
for a typical login state (20 cookies, 4 KiB of local storage) and a large one (1 MiB of local
storage), this times, as the median of ``rounds`` runs:

- ``plain save`` / ``plain load``: the statement and JSON alone, as the store did before;
- ``sealed save``: a save of a state whose key is known (every save after the first);
- ``first save``: the first save of a name, which seals a fresh key with NIP-44;
- ``sealed load``: a load on the store that saved it (its key known);
- ``cold load``: a load on a store just opened (a restart, another worker), which opens the
  row's key with NIP-44 first.

With a bunker or an n_signer, ``first save`` and ``cold load`` add one round trip to the
signer each; the other rows do not.

Usage: ``.venv/bin/python bench/bench_sealed_state.py [rounds]`` (default 50).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nostr_browserd.daemon.store import SqliteStore
from nostr_browserd.nostr.signer import KeySigner


def login_state(storage_bytes: int) -> dict[str, Any]:
    cookies = [
        {"name": f"c{i}", "value": "v" * 40, "domain": "example.org", "path": "/"}
        for i in range(20)
    ]
    storage = [{"name": "blob", "value": "x" * storage_bytes}]
    return {
        "cookies": cookies,
        "origins": [{"origin": "https://example.org", "localStorage": storage}],
    }


async def median_ms(rounds: int, step: Callable[[int], Awaitable[object]]) -> float:
    times = []
    for n in range(rounds):
        start = time.perf_counter()
        await step(n)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure(directory: Path, state: dict[str, Any], rounds: int) -> dict[str, float]:
    identity = KeySigner.generate()
    store = SqliteStore(directory / "state.sqlite3", lambda: identity)
    text = json.dumps(state, ensure_ascii=False)

    async def plain_save(n: int) -> None:
        await store._change(
            "INSERT INTO saved_state (owner, name, state, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (owner, name) DO UPDATE SET state = excluded.state, at = excluded.at",
            ("plain", "work", json.dumps(state, ensure_ascii=False), time.time()),
        )

    async def plain_load(n: int) -> None:
        rows = await store._rows("SELECT state FROM saved_state WHERE owner = 'plain'")
        json.loads(rows[0][0])

    result = {
        "plain save": await median_ms(rounds, plain_save),
        "plain load": await median_ms(rounds, plain_load),
        "first save": await median_ms(rounds, lambda n: store.save_state("o", f"n{n}", state)),
        "sealed save": await median_ms(rounds, lambda n: store.save_state("o", "n0", state)),
        "sealed load": await median_ms(rounds, lambda n: store.load_state("o", "n0")),
    }
    cold = []
    for _ in range(rounds):
        fresh = SqliteStore(directory / "state.sqlite3", lambda: identity)
        start = time.perf_counter()
        await fresh.load_state("o", "n0")
        cold.append((time.perf_counter() - start) * 1000)
        await fresh.close()
    result["cold load"] = statistics.median(cold)
    [(sealed,)] = await store._rows("SELECT state FROM saved_state WHERE name = 'n0'")
    result["bytes plain"], result["bytes sealed"] = len(text.encode()), len(sealed.encode())
    await store.close()
    return result


async def main(rounds: int) -> None:
    for label, size in (("typical (20 cookies, 4 KiB storage)", 4096), ("large (1 MiB)", 1 << 20)):
        with tempfile.TemporaryDirectory() as directory:
            result = await measure(Path(directory), login_state(size), rounds)
        print(f"{label}:")
        for name, value in result.items():
            unit = "" if name.startswith("bytes") else " ms"
            print(f"  {name:12} {value:10.3f}{unit}" if unit else f"  {name:12} {value:10.0f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
