"""Log lines about outside input, rate-limited: a flood of bad messages must not flood the
journal too (each reason gets a short burst per window, then a count)."""

from __future__ import annotations

import logging
import time

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """At most ``burst`` warnings per ``window`` seconds per reason; the rest are counted."""

    def __init__(self, logger: logging.Logger, burst: int = 5, window: float = 60.0) -> None:
        self._log, self._burst, self._window = logger, burst, window
        self._windows: dict[str, tuple[float, int, int]] = {}

    def warning(self, reason: str, message: str, *args: object) -> None:
        """Log ``message`` unless ``reason`` already used its burst in this window."""
        now = time.monotonic()
        start, shown, hidden = self._windows.get(reason, (now, 0, 0))
        if now - start > self._window:
            if hidden:
                self._log.warning("%d more %r messages were not logged", hidden, reason)
            start, shown, hidden = now, 0, 0
        if shown < self._burst:
            self._log.warning(message, *args)
            shown += 1
        else:
            hidden += 1
        self._windows[reason] = (start, shown, hidden)
