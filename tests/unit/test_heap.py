"""The collector paused around a burst of objects that all stay alive: a snapshot's tree."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import render
from nostr_browserd.heap import collector_paused


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection that starts while the test runs."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    yield seen
    gc.callbacks.remove(count)


def test_a_big_snapshot_renders_without_setting_off_a_collection(
    collections: list[int],
) -> None:
    raw = "- main [ref=e1]:\n" + "".join(
        f'  - link "entry {i}" [ref=e{i + 2}] [cursor=pointer]:\n    - /url: "#e{i}"\n'
        for i in range(5_000)
    )
    options = Options(max_chars=10**9)
    gc.collect()  # the counts start from nothing: none is due when the render begins
    collections.clear()
    rendered = render(raw, options)
    during = len(collections)  # read before anything else is built: that may set one off
    assert during <= 1, collections  # the pass that frees the tree, as the collector resumes
    assert rendered.refs == 5_001 and not rendered.truncated
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error_and_stays_off_if_it_was() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a render that failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
