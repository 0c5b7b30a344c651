"""What one check means for its monitor: pure, so each rule is tested without a browser.

A check either read the watched text or failed.  The first reading is the baseline and says
nothing; after it, what the monitor watches for (a change, text appearing, text going) is
news, once.  Failures in a row reach ``failures_before_notice`` once, and the first success
after that is said once too.  Each outcome also sets when the monitor checks next.
"""

from __future__ import annotations

from ..store.watch_rows import WatchRow
from .change import Seen, headline, line_diff, seen
from .when import on_beat, retry_in

News = list[tuple[str, str]]  # (event, what the message says after the address)


def judge(
    row: WatchRow,
    text: str | None,
    failure: str,
    now: float,
    *,
    notice_after: int,
    fastest: float,
    worker: str,
) -> tuple[News, str]:
    """Update ``row`` with a check's outcome at ``now`` (``text`` read, or None and why it
    failed) and its next due time; the news to tell and the change's diff."""
    spec, state = row.spec, row.state
    state["checked"], state["checks"] = now, int(state.get("checks", 0)) + 1
    state["worker"] = worker  # with several workers: the one serving the monitor's owner
    interval = float(spec["every"])
    news: News = []
    if text is None:
        failures = int(state.get("failures", 0)) + 1
        state["failures"], state["outcome"] = failures, f"failed: {failure}"
        if failures == notice_after:
            news.append(
                ("failing", f"is failing: {failure.rstrip('.')} ({failures} checks in a row)")
            )
        row.due = now + retry_in(interval, failures, notice_after, fastest)
        return news, ""
    if int(state.get("failures", 0)) >= notice_after:
        news.append(("recovered", "works again"))
    state["failures"] = 0
    row.due = on_beat(f"{row.owner}/{row.id}", int(spec["every"]), now)
    now_seen = seen(text, spec.get("needle"))
    before = Seen(state.get("text", ""), bool(state.get("present")))
    first = "text" not in state
    state["text"], state["present"] = now_seen.text, now_seen.present
    if first:
        state["outcome"] = "baseline recorded"
        return news, ""
    head = headline(spec["mode"], spec.get("needle"), before, now_seen)
    state["outcome"] = "no change" if head is None else head
    if head is None:
        return news, ""
    state["changed"] = now
    news.append((spec["mode"], head))
    return news, line_diff(before.text, now_seen.text)
