"""The text grammar names every tool by its words: ``storage local get key``."""

from __future__ import annotations

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request


@pytest.mark.parametrize("name", [t.name for t in REGISTRY])
def test_every_tool_is_named_by_its_words(name: str) -> None:
    assert parse_request(name.replace("_", " "), REGISTRY).tool == name


@pytest.mark.parametrize(
    ("line", "tool", "params"),
    [
        ("wait for text hi", "wait_for_text", {"text": "hi"}),
        ("wait for @e2", "wait_for", {"ref": "@e2"}),
        ("storage local set k v", "storage_local_set", {"key": "k", "value": "v"}),
        ("storage local get key k", "storage_local_get_key", {"key": "k"}),
        ('get text "wait for"', "get_text", {"selector": "wait for"}),
        # agent-browser's spelling, and a picture's numbers (browser/labels.py resolves them)
        ("screenshot --annotate", "screenshot_annotated", {}),
        ("screenshot #main", "screenshot", {"selector": "#main"}),
        ('fill 2 "Ada"', "fill", {"selector": "2", "value": "Ada"}),
    ],
)
def test_the_longest_name_wins_and_quotes_stop_it(line: str, tool: str, params: dict) -> None:
    request = parse_request(line, REGISTRY)
    assert (request.tool, request.params) == (tool, params)
