"""Snapshot size and speed on the Python docs: raw ai snapshot vs our default vs -i.

Serves /usr/share/doc/python3.11/html on 127.0.0.1 and prints, per page, the median of
five runs of characters / refs / milliseconds, with ratios against the raw snapshot
measured in the same run.  Usage: .venv/bin/python bench/bench_snapshot.py [pages…]
"""

from __future__ import annotations

import asyncio
import gc
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fixtures

from nostr_browserd.browser.session import BrowserConfig, BrowserPool
from nostr_browserd.browser.snapshot import Options, take
from tests.fixtures.site import serve_directory

DOCS = "/usr/share/doc/python3.11/html"
PAGES = ["library/index.html", "library/stdtypes.html", "tutorial/controlflow.html"]
RUNS = 5
VARIANTS = ("raw", "default", "interactive")
REF = re.compile(r"\[ref=[^\]]+\]")


async def measure(page, variant: str) -> tuple[int, int, float]:
    """One snapshot: characters, refs shown, milliseconds."""
    start = time.perf_counter()
    if variant == "raw":
        text = await page.aria_snapshot(mode="ai")
    else:
        options = Options(interactive=variant == "interactive", max_chars=10**9)
        text = (await take(page, options)).text
    elapsed = (time.perf_counter() - start) * 1000
    return len(text), len(REF.findall(text)), elapsed


async def main(pages: list[str]) -> None:
    server = serve_directory(DOCS)
    base = f"http://127.0.0.1:{server.server_port}/"
    pool = BrowserPool(BrowserConfig())
    await pool.start()
    session = await pool.session("bench")
    print(f"{'page':28} {'variant':12} {'chars':>9} {'refs':>6} {'ms':>7}  ratios vs raw")
    try:
        for path in pages:
            await session.page.goto(base + path)
            await measure(session.page, "raw")  # warm-up: the first snapshot of a page is slower
            runs: dict[str, list[tuple[int, int, float]]] = {v: [] for v in VARIANTS}
            for _ in range(RUNS):  # interleaved, so drift in machine load hits all alike
                for variant in VARIANTS:
                    gc.collect()
                    runs[variant].append(await measure(session.page, variant))
            results = {
                v: tuple(statistics.median(r[i] for r in runs[v]) for i in range(3))
                for v in VARIANTS
            }
            raw = results["raw"]
            for variant, (chars, refs, ms) in results.items():
                ratios = f"chars {chars / raw[0]:.2f}x  time {ms / raw[2]:.2f}x"
                print(f"{path:28} {variant:12} {chars:>9,.0f} {refs:>6,.0f} {ms:>7.0f}  {ratios}")
    finally:
        await pool.close()
        server.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or PAGES))
