"""When a monitor checks and a schedule runs: pure rules over times, tested with a fake clock.

Every time here is seconds since the epoch (``time.time()``); nothing reads a clock.  A rule
is an interval (``every 15m``) or a five-field cron expression in a time zone; ``daily
HH:MM`` and ``weekdays HH:MM`` are written as cron.  The cron arithmetic is croniter's: a
time that a daylight-saving jump skips runs at the first moment after the jump, and a time
the clock passes twice (the autumn hour) runs once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...errors import BrowserdError, ErrorCode

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
INTERVAL = re.compile(r"^\s*(\d{1,7})\s*([smhd])\s*$", re.IGNORECASE)
CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
SLOWEST_RETRY = 6 * 3600.0  # a failing monitor is tried at least this often
SPREAD_AT_MOST = 60.0  # seconds a due check may be moved later to spread checks out


def invalid(message: str) -> BrowserdError:
    return BrowserdError(ErrorCode.INVALID_PARAMS, message)


def parse_interval(text: str) -> int:
    """``30s``, ``15m``, ``2h``, ``1d`` → seconds; ``INVALID_PARAMS`` saying the form."""
    match = INTERVAL.match(text)
    if match is None or int(match[1]) == 0:
        raise invalid(f"{text!r} is not an interval: write a number and s, m, h or d (15m, 2h).")
    return int(match[1]) * UNITS[match[2].lower()]


def show_interval(seconds: int) -> str:
    """The shortest way to write ``seconds`` back (900 → ``15m``)."""
    for unit in ("d", "h", "m"):
        if seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"


def zone(name: str) -> ZoneInfo:
    """The time zone ``name`` (``Europe/Paris``, ``UTC``); ``INVALID_PARAMS`` when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise invalid(
            f"{name!r} is not a time zone: write Area/City, such as Europe/Paris."
        ) from None


@dataclass(frozen=True)
class Rule:
    """A monitor's or schedule's timing: ``every`` seconds, or ``cron`` in ``tz``.

    ``text`` is how the person wrote it, as messages show it.
    """

    text: str
    every: int | None = None
    cron: str | None = None
    tz: str = "UTC"

    def next_after(self, moment: float) -> float:
        """The first due time strictly after ``moment``."""
        if self.every is not None:
            return moment + self.every
        assert self.cron is not None
        local = zone(self.tz)
        start = datetime.fromtimestamp(moment, local)
        times = _croniter()(self.cron, start)
        while True:
            due: datetime = times.get_next(datetime)
            # The autumn hour: croniter gives 02:30 at both offsets; the second is the same
            # wall-clock time as the run before it, so it is not a new one.
            if due.replace(tzinfo=None) != start.replace(tzinfo=None):
                return due.timestamp()

    def shortest(self, moment: float) -> float:
        """Seconds between the next two due times after ``moment`` (for the minimum)."""
        first = self.next_after(moment)
        return self.next_after(first) - first


def parse_when(text: str, tz: str = "UTC") -> Rule:
    """``every <interval>``, ``daily HH:MM``, ``weekdays HH:MM`` or a five-field cron
    expression, in the time zone ``tz``; ``INVALID_PARAMS`` naming the forms."""
    zone(tz)
    words = text.split()
    head = words[0].lower() if words else ""
    if head == "every" and len(words) == 2:
        return Rule(f"every {words[1]}", every=parse_interval(words[1]), tz=tz)
    if head in ("daily", "weekdays") and len(words) == 2:
        clock = CLOCK.match(words[1])
        if clock is None:
            raise invalid(f"{words[1]!r} is not a time of day: write HH:MM, such as 08:00.")
        days = "*" if head == "daily" else "1-5"
        cron = f"{int(clock[2])} {int(clock[1])} * * {days}"
        return Rule(f"{head} {words[1]}", cron=cron, tz=tz)
    if len(words) == 5 and _croniter().is_valid(" ".join(words)):
        return Rule(" ".join(words), cron=" ".join(words), tz=tz)
    raise invalid(
        f"{text!r} is not a time: write every <interval> (every 15m), daily HH:MM, weekdays"
        ' HH:MM, or a five-field cron expression in quotes ("0 8 * * 1-5").'
    )


def spread(key: str, window: float) -> float:
    """A delay in ``[0, min(window, SPREAD_AT_MOST))`` that is always the same for ``key``,
    so checks due together (a restart, many monitors made at once) are not fired together."""
    digest = hashlib.sha256(key.encode()).digest()
    fraction = int.from_bytes(digest[:4], "big") / 2**32
    return fraction * min(window, SPREAD_AT_MOST)


def beat_period(every: int) -> int:
    """The period of a monitor's beat: the largest divisor of ``every`` (whole seconds) up to
    :data:`SPREAD_AT_MOST`, so that a beat is ``every`` apart too."""
    return next(p for p in range(min(every, int(SPREAD_AT_MOST)), 0, -1) if every % p == 0)


def on_beat(key: str, every: int, after: float) -> float:
    """When a monitor checked at ``after`` checks next: ``every`` later, moved to the nearest
    moment of its beat (a second of the minute fixed for ``key``, :func:`spread`).

    Monitors made or started together would otherwise check together for ever after, each
    wave of checks taking the machine from the controllers' commands at once.  A check is
    moved by half a beat at most, once: on its beat, the next is ``every`` later.
    """
    period = beat_period(every)
    phase = spread(key, period)
    return phase + round((after + every - phase) / period) * period


def due_at_start(due: float, now: float, key: str, window: float) -> float:
    """When an item due at ``due`` runs after a start at ``now``: as planned if that is still
    ahead; otherwise once, soon (spread), never once per interval missed."""
    return due if due > now else now + spread(key, window)


def retry_in(interval: float, failures: int, notice_after: int, fastest: float) -> float:
    """Seconds until a failing check is tried again, after ``failures`` in a row.

    Before the notice: sooner than the interval, doubling from ``fastest`` (a blip passes
    quickly); after it, slower than the interval, doubling up to :data:`SLOWEST_RETRY` (or
    the interval, when that is longer).
    """
    if failures < notice_after:
        return min(interval, fastest * 2.0 ** max(failures - 1, 0))
    slow = interval * 2.0 ** (failures - notice_after + 1)
    return min(slow, max(interval, SLOWEST_RETRY))


def _croniter() -> Any:  # croniter has no type information
    """croniter, loaded by the first cron rule rather than on the daemon's start (9 ms)."""
    from croniter import croniter

    return croniter
