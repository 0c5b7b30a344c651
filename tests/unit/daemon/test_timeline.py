"""The start's timeline: spans from the process's start, in the order they began."""

import asyncio
import re

import pytest

from nostr_browserd.daemon.timeline import Timeline, process_age


def test_spans_count_from_the_process_start_and_read_in_the_order_they_began():
    timeline = Timeline()
    assert process_age() > 0  # this process started before the test
    name, began, ended = timeline.spans[0]
    assert (name, began) == ("imports", 0.0) and ended > 0
    with pytest.raises(RuntimeError), timeline.step("browser"):
        raise RuntimeError("a failed step keeps its span")
    asyncio.run(timeline.timed("relays", asyncio.sleep(0)))
    timeline.spans.append(("early", 0.01, 0.02))  # began before the ones above
    summary = timeline.summary()
    steps = re.findall(r"([a-z ]+) (\d+\.\d+)–(\d+\.\d+)", summary.split(":", 1)[1])
    assert [s[0].strip() for s in steps] == ["imports", "early", "browser", "relays"]
    assert summary.startswith("started in ")
