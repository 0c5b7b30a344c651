"""The timing and change rules of monitors and schedules, against a fake clock."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from nostr_browserd.daemon.schedule import change
from nostr_browserd.daemon.schedule.change import MAX_KEPT, headline, line_diff, normalise, seen
from nostr_browserd.daemon.schedule.outcome import judge
from nostr_browserd.daemon.schedule.when import (
    SLOWEST_RETRY,
    beat_period,
    due_at_start,
    on_beat,
    parse_interval,
    parse_when,
    retry_in,
    show_interval,
    spread,
)
from nostr_browserd.daemon.store.watch_rows import WatchRow
from nostr_browserd.errors import BrowserdError

BERLIN = ZoneInfo("Europe/Berlin")


def at(zone: ZoneInfo, *parts: int, fold: int = 0) -> float:
    return datetime(*parts, tzinfo=zone, fold=fold).timestamp()  # type: ignore[misc]


def local(moment: float, zone: ZoneInfo = BERLIN) -> str:
    return datetime.fromtimestamp(moment, zone).strftime("%a %Y-%m-%d %H:%M %z")


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("15m", 900), ("2h", 7200), ("1d", 86400), ("90S", 90)]
)
def test_intervals(text, seconds):
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["0m", "15", "m", "1w", "-5m", "1.5h", "15 minutes"])
def test_a_bad_interval_says_the_form(text):
    with pytest.raises(BrowserdError, match="write a number and s, m, h or d"):
        parse_interval(text)


def test_intervals_are_shown_as_written():
    assert [show_interval(s) for s in (45, 60, 900, 7200, 86400, 90)] == [
        "45s",
        "1m",
        "15m",
        "2h",
        "1d",
        "90s",
    ]


def test_every_runs_an_interval_after_the_last_run_across_a_dst_change():
    rule = parse_when("every 1h", "Europe/Berlin")
    before = at(BERLIN, 2026, 3, 29, 1, 30)  # the night the clocks go 02:00 → 03:00
    assert rule.next_after(before) - before == 3600
    assert local(rule.next_after(before)) == "Sun 2026-03-29 03:30 +0200"


def test_daily_in_a_time_zone():
    rule = parse_when("daily 08:00", "Europe/Berlin")
    first = rule.next_after(at(BERLIN, 2026, 1, 5, 9, 0))
    assert local(first) == "Tue 2026-01-06 08:00 +0100"
    assert local(rule.next_after(at(BERLIN, 2026, 1, 5, 7, 59))) == "Mon 2026-01-05 08:00 +0100"


def test_daily_keeps_its_wall_clock_time_across_both_dst_changes():
    rule = parse_when("daily 08:00", "Europe/Berlin")
    spring = [rule.next_after(at(BERLIN, 2026, 3, 28, 9, 0))]
    spring.append(rule.next_after(spring[0]))
    assert [local(t) for t in spring] == [
        "Sun 2026-03-29 08:00 +0200",
        "Mon 2026-03-30 08:00 +0200",
    ]
    assert spring[1] - spring[0] == 86400  # a day; the day before it was 23 hours
    autumn = rule.next_after(at(BERLIN, 2026, 10, 24, 9, 0))
    assert local(autumn) == "Sun 2026-10-25 08:00 +0100"
    assert autumn - at(BERLIN, 2026, 10, 24, 8, 0) == 25 * 3600


def test_a_time_the_spring_jump_skips_runs_once_right_after_it():
    rule = parse_when("daily 02:30", "Europe/Berlin")
    due = rule.next_after(at(BERLIN, 2026, 3, 28, 12, 0))
    assert local(due) == "Sun 2026-03-29 03:00 +0200"
    assert local(rule.next_after(due)) == "Mon 2026-03-30 02:30 +0200"


def test_a_time_the_autumn_hour_repeats_runs_once():
    rule = parse_when("daily 02:30", "Europe/Berlin")
    first = rule.next_after(at(BERLIN, 2026, 10, 24, 12, 0))
    assert local(first) == "Sun 2026-10-25 02:30 +0200"
    assert local(rule.next_after(first)) == "Mon 2026-10-26 02:30 +0100"


def test_weekdays_skip_the_weekend():
    rule = parse_when("weekdays 07:15", "UTC")
    friday = at(ZoneInfo("UTC"), 2026, 1, 9, 8, 0)
    monday = rule.next_after(friday)
    assert local(monday, ZoneInfo("UTC")) == "Mon 2026-01-12 07:15 +0000"
    assert local(rule.next_after(monday), ZoneInfo("UTC")) == "Tue 2026-01-13 07:15 +0000"


def test_cron_in_a_zone():
    rule = parse_when("0 8 * * 1-5", "America/New_York")
    ny = ZoneInfo("America/New_York")
    due = rule.next_after(at(ny, 2026, 3, 7, 12, 0))  # a Saturday; DST begins on the 8th
    assert local(due, ny) == "Mon 2026-03-09 08:00 -0400"
    assert rule.text == "0 8 * * 1-5" and rule.shortest(due) == 86400


@pytest.mark.parametrize(
    "text", ["", "every", "every soon", "daily 8am", "daily 24:00", "0 8 * *", "0 0 8 * * *", "x"]
)
def test_a_bad_when_says_the_forms(text):
    with pytest.raises(BrowserdError, match="is not"):
        parse_when(text)


def test_an_unknown_zone_is_refused():
    with pytest.raises(BrowserdError, match="not a time zone"):
        parse_when("daily 08:00", "Mars/Olympus")


def test_missed_while_down_runs_once_soon():
    now = 1_000_000.0
    later = due_at_start(now + 50, now, "m1", 900)
    assert later == now + 50  # still ahead: as planned
    missed = [due_at_start(now - k * 900, now, "m1", 900) for k in (1, 5, 100)]
    assert len(set(missed)) == 1 and now <= missed[0] < now + 60  # once, soon, whatever missed


def test_spread_is_stable_per_key_bounded_and_spreads():
    delays = [spread(f"owner/m{i}", 600) for i in range(100)]
    assert all(0 <= d < 60 for d in delays)
    assert spread("owner/m1", 600) == spread("owner/m1", 600)
    assert len({round(d) for d in delays}) > 30
    assert spread("x", 10) < 10


def test_monitors_made_together_check_on_beats_spread_over_their_minute():
    """100 monitors checked in the same second do not all check again in the same second:
    each next check is on its own beat, a second of the minute fixed for it."""
    rows = [
        WatchRow("monitor", "alice", f"m{i}", monitor().spec | {"every": 60}, {}, 0.0)
        for i in range(100)
    ]
    for row in rows:
        check(row, "Price 10 €", 1000.0)
    firsts = [row.due for row in rows]
    assert len({int(due % 60) // 5 for due in firsts}) == 12, "every 5 s of the minute has some"
    assert all(abs(due - 1060.0) <= 30 for due in firsts), "moved by half a beat at most"
    for row in rows:  # a check a few seconds late keeps the beat: the next is a minute on
        check(row, "Price 10 €", row.due + 4)
    assert [row.due for row in rows] == [due + 60 for due in firsts]


@pytest.mark.parametrize(("every", "period"), [(60, 60), (900, 60), (90, 45), (45, 45), (61, 1)])
def test_a_beat_divides_the_interval_and_moves_a_check_half_a_beat_at_most(every, period):
    assert beat_period(every) == period
    nexts = [on_beat(f"owner/m{i}", every, 5000.0) for i in range(50)]
    assert all(abs(t - 5000.0 - every) <= period / 2 for t in nexts)
    assert all(on_beat(f"owner/m{i}", every, t) == t + every for i, t in enumerate(nexts))


def test_retries_back_off_then_slow_down_after_the_notice():
    waits = [retry_in(900, n, 3, 60) for n in range(1, 8)]
    assert waits[:2] == [60, 120]  # before the notice: sooner than the interval, doubling
    assert waits[2:5] == [1800, 3600, 7200]  # after it: slower than the interval
    assert max(waits) == SLOWEST_RETRY
    assert retry_in(2 * 86400, 9, 3, 60) == 2 * 86400  # never faster than the interval


def test_whitespace_is_normalised():
    assert normalise("  Price:\t 12 €  \n\n\n  In   stock \n") == "Price: 12 €\nIn stock"


def test_a_long_page_is_normalised_only_as_far_as_is_kept(monkeypatch):
    """The lines past what is kept are never worked on: a 400,000-character index held the
    event loop (and every controller's command) for tens of milliseconds a check."""
    worked: list[str] = []
    spaces = change.SPACES

    class Counting:
        def sub(self, blank: str, line: str) -> str:
            worked.append(line)
            return spaces.sub(blank, line)

    line = "word  " * 16  # 96 characters, 80 once normalised
    text = "\n".join([line] * (10 * MAX_KEPT // 80))  # ten times what is kept
    whole = "\n".join([line.strip().replace("  ", " ")] * (MAX_KEPT // 80 + 1))[:MAX_KEPT]
    monkeypatch.setattr(change, "SPACES", Counting())
    assert normalise(text) == whole
    assert len(worked) == MAX_KEPT // 80 + 1, "one line past the cut, not all of them"


def test_change_contains_and_missing():
    a, b = seen("Sold out\nPrice 10", "Sold out"), seen("In stock\nPrice 10", "Sold out")
    assert headline("change", None, a, a) is None
    assert headline("change", None, a, b) == "changed"
    assert headline("missing", "Sold out", a, b) == "no longer contains 'Sold out'"
    assert headline("missing", "Sold out", b, a) is None
    assert headline("contains", "Sold out", b, a) == "now contains 'Sold out'"
    assert headline("contains", "Sold out", a, a) is None  # only again after it went


def test_the_diff_is_short_and_says_when_cut():
    assert line_diff("a\nprice 10\nc", "a\nprice 12\nc") == "-price 10\n+price 12"
    old = "\n".join(f"line {i}" for i in range(100))
    cut = line_diff(old, old.replace("line", "row"))
    assert cut.count("\n") == 12 and cut.endswith("more changed lines not shown)")
    long = line_diff("x", "y" * 5000)
    assert len(long) < 1400 and "…" in long


def monitor(**spec: Any) -> WatchRow:
    base = {"url": "https://shop.example/item", "every": 900, "mode": "change", "needle": None}
    return WatchRow("monitor", "alice", "m1", {**base, **spec}, {}, 0.0)


def check(row: WatchRow, text: str | None, now: float = 1000.0) -> tuple[list[Any], str]:
    return judge(
        row, text, "net::ERR_CONNECTION_REFUSED", now, notice_after=3, fastest=60, worker="w1"
    )


def test_the_first_check_is_the_baseline_and_a_change_is_news_once():
    row = monitor()
    assert check(row, "Price 10 €") == ([], "")
    assert row.state["outcome"] == "baseline recorded" and abs(row.due - 1900.0) <= 30
    assert check(row, "Price  10 €\n") == ([], "")  # whitespace is no change
    assert check(row, "Price 12 €") == ([("change", "changed")], "-Price 10 €\n+Price 12 €")
    assert check(row, "Price 12 €") == ([], "")
    assert row.state["checks"] == 4 and row.state["worker"] == "w1"


def test_failures_are_said_once_at_the_notice_and_the_recovery_once():
    row = monitor()
    check(row, "Price 10 €")
    said = [check(row, None, 2000.0 + n)[0] for n in range(6)]
    assert said[2] == [("failing", "is failing: net::ERR_CONNECTION_REFUSED (3 checks in a row)")]
    assert [s for i, s in enumerate(said) if i != 2] == [[]] * 5
    assert row.state["failures"] == 6 and row.due - 2005.0 > 900  # slower than the interval
    assert check(row, "Price 10 €", 9000.0) == ([("recovered", "works again")], "")
    assert check(row, "Price 10 €", 9900.0) == ([], "") and row.state["failures"] == 0


def test_a_blip_is_retried_sooner_and_never_said():
    row = monitor()
    check(row, "Price 10 €")
    assert check(row, None, 2000.0) == ([], "") and row.due == 2060.0
    assert check(row, "Price 10 €", 2060.0) == ([], "")


def test_missing_is_news_when_its_text_goes():
    row = monitor(mode="missing", needle="Sold out")
    check(row, "Sold out")
    news, diff = check(row, "In stock")
    assert news == [("missing", "no longer contains 'Sold out'")]
    assert diff == "-Sold out\n+In stock"
