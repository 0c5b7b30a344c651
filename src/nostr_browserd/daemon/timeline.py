"""When each step of the daemon's start ran, counted from the process's own start.

The daemon logs it once it is ready (``started in 1.21 s: imports 0.00–0.32, launch …``),
so a slow start says where its time went; the cold-start benchmark reads the same line.
Steps that overlap (the browser launches while the relays connect) show as overlapping
spans.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def process_age() -> float:
    """Seconds since the kernel started this process (to its clock tick), 0 where unknown."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


class Timeline:
    """Spans of the start, in seconds since the process started; the first is its imports
    (and the config's), until the timeline was made."""

    def __init__(self) -> None:
        self._origin = time.monotonic() - process_age()
        self.spans: list[tuple[str, float, float]] = [("imports", 0.0, self.now())]

    def now(self) -> float:
        """Seconds since the process started."""
        return time.monotonic() - self._origin

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Record the span of the ``with`` block as ``name`` (also when it raises)."""
        began = self.now()
        try:
            yield
        finally:
            self.spans.append((name, began, self.now()))

    async def timed(self, name: str, work: Awaitable[T]) -> T:
        """``work``'s result, its span recorded as ``name`` (for a task that runs beside)."""
        with self.step(name):
            return await work

    def summary(self) -> str:
        """``started in T s: name began–ended, …`` in the order the steps began."""
        spans = sorted(self.spans, key=lambda span: span[1])
        steps = ", ".join(f"{name} {began:.2f}–{ended:.2f}" for name, began, ended in spans)
        return f"started in {self.now():.2f} s: {steps}"
