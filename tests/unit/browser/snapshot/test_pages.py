"""Refs across pages: a cut says what it left out, and pages follow on without gaps."""

import re

import pytest

from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import render
from nostr_browserd.errors import BrowserdError, ErrorCode

from .samples import RAW, REFS, big_raw


def test_cut_says_how_to_narrow():
    rendered = render(RAW, Options(max_chars=210))
    assert rendered.truncated
    assert rendered.text.splitlines()[-1].startswith("[snapshot cut: lines 1–")
    assert "scope=" in rendered.text and "interactive=true" in rendered.text


def read_in_pages(raw: str, options: Options) -> tuple[list[str], int]:
    """Every page's lines (notes dropped), following ``next`` until the end."""
    lines, start, pages = [], None, 0
    while True:
        options.start = start
        rendered = render(raw, options)
        page = rendered.text.splitlines()
        assert len(rendered.text) <= options.max_chars
        assert rendered.refs == len(REFS.findall(rendered.text))
        lines += page[:-1] if page[-1].startswith("[snapshot") else page
        pages += 1
        if rendered.next is None:
            return lines, pages
        start = rendered.next


@pytest.mark.parametrize(
    "view", [{}, {"interactive": True}, {"compact": False, "urls": True}, {"depth": 4}]
)
def test_a_big_snapshot_reads_in_pages_without_gaps_or_repeats(view):
    raw = big_raw()
    whole = render(raw, Options(max_chars=10**9, **view)).text.splitlines()
    lines, pages = read_in_pages(raw, Options(max_chars=1500, **view))
    assert pages > 3
    assert lines == whole


def test_a_cut_names_the_subtrees_it_left_out():
    raw = big_raw()
    rendered = render(raw, Options(max_chars=2000))
    note = rendered.text.splitlines()[-1]
    left = dict(re.findall(r"@(e\d+) [a-z]+(?: \"[^\"]*\")? \(([\d,]+) lines\)", note))
    assert {"e145", "e266", "e387", "e508"} <= set(left), note  # the tables after the cut
    assert f"start={rendered.next}" in note
    for ref, count in left.items():
        scoped = render(raw, Options(max_chars=10**9), scopes=[ref]).text.splitlines()
        assert len(scoped) == int(count.replace(",", "")), ref
    first = render(raw, Options(max_chars=10**9), scopes=[rendered.next.lstrip("@")]).text
    assert first.splitlines()[0] not in rendered.text.splitlines()


def test_start_errors():
    raw = big_raw()
    with pytest.raises(BrowserdError) as stale:
        render(raw, Options(start="e9999"))
    assert stale.value.code == ErrorCode.STALE_REF
    with pytest.raises(BrowserdError) as far:
        render(raw, Options(start="100000"))
    assert far.value.code == ErrorCode.INVALID_PARAMS
    assert render(raw, Options(start="3", max_chars=10**9)).text.startswith('  - link "Nav 1"')
