"""Big replies go out in numbered parts that reassemble exactly."""

import base64
import json
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nostr_browserd.dm.chunks import (
    ReassemblyError,
    as_part,
    reassemble,
    split,
    wire_size,
)


def parts_of(messages):
    return [as_part(m) for m in messages]


def test_small_reply_is_one_plain_message():
    assert split('{"id":1}', 1) == ['{"id":1}']
    assert as_part('{"id":1,"success":true}') is None
    assert as_part("hello") is None


def test_screenshot_sized_reply_splits_and_reassembles():
    png = base64.b64encode(os.urandom(300_000)).decode()
    whole = json.dumps({"id": "s1", "success": True, "data": {"base64": png}})
    messages = split(whole, "s1", budget=24_000)
    assert len(messages) > 10
    assert all(wire_size(m) <= 24_000 + 200 for m in messages)
    parts = parts_of(messages)
    assert [p["part"] for p in parts] == list(range(1, len(parts) + 1))
    random.shuffle(parts)
    assert reassemble(parts) == whole


def test_escape_heavy_text_keeps_parts_within_budget():
    whole = '"\\\x01é😀' * 5000
    messages = split(whole, 7, budget=2000)
    assert all(wire_size(m) <= 2000 + 200 for m in messages)
    assert reassemble(parts_of(messages)) == whole


def test_missing_part_is_incomplete_and_corruption_is_an_error():
    whole = "x" * 10_000
    parts = parts_of(split(whole, 1, budget=1000))
    assert reassemble(parts[:-1]) is None
    bad = [dict(p) for p in parts]
    bad[3]["data"] = "y" + bad[3]["data"][1:]
    with pytest.raises(ReassemblyError, match="sha256"):
        reassemble(bad)
    other = parts_of(split("z" * 10_000, 1, budget=1000))
    with pytest.raises(ReassemblyError, match="mixed"):
        reassemble([parts[0], other[1]])
    with pytest.raises(ReassemblyError, match="twice"):
        reassemble([parts[0], {**parts[0], "data": "q"}])


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=3000), st.integers(min_value=64, max_value=700))
def test_any_text_round_trips(text, budget):
    messages = split(text, "r", budget=budget)
    assert all(wire_size(m) <= budget + 200 for m in messages)
    if len(messages) == 1:
        assert messages[0] == text
    else:
        assert reassemble(parts_of(messages)) == text
