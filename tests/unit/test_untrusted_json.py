"""JSON from outside: any failure is one BadJSON, never RecursionError; depth is bounded."""

from __future__ import annotations

import pytest

from nostr_browserd.untrusted_json import MAX_DEPTH, BadJSON, loads


@pytest.mark.parametrize(
    "text",
    [
        "[" * 60000,  # RecursionError inside json.loads (issue 9 §1.1)
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),  # parses, but too deep to walk safely
        '{"a":' * 900 + "1" + "}" * 900,  # just under Python's recursion limit
        "not json",
        "",
        b"\xff\xfe\xfa",
        "1" * 5000,  # more digits than int() accepts
    ],
    ids=["deep-open", "one-too-deep", "deep-objects", "garbage", "empty", "bytes", "digits"],
)
def test_bad_input_raises_bad_json_only(text: str | bytes) -> None:
    with pytest.raises(BadJSON):
        loads(text)


def test_nesting_up_to_the_limit_and_many_brackets_side_by_side_are_fine() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(deep) == eval(deep)
    assert loads("[" + ",".join(["[[]]"] * 1000) + "]") == [[[]]] * 1000
