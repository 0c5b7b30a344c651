"""Pure policy: which role may run what, and what counts as an approval."""

import pytest

from nostr_browserd.commands.catalog import REGISTRY
from nostr_browserd.daemon.dispatch import APPROVAL, is_text, permits
from nostr_browserd.errors import BrowserdError

BATCH_WITH_CLICK = {"commands": [{"tool": "get_url"}, {"tool": "click", "params": {"ref": "@e1"}}]}
BATCH_OF_READS = {"commands": [{"tool": "get_url"}, {"tool": "get_title"}]}


@pytest.mark.parametrize(
    ("role", "tool", "params", "allowed"),
    [
        ("full", "click", {"ref": "@e1"}, True),
        ("read", "get_text", {}, True),
        ("read", "click", {"ref": "@e1"}, False),
        ("read", "batch", BATCH_OF_READS, True),
        ("read", "batch", BATCH_WITH_CLICK, False),
        (["get_url", "get_title"], "batch", BATCH_OF_READS, True),
        (["get_url"], "batch", BATCH_OF_READS, False),
        (["get_url"], "get_title", {}, False),
        (["open"], "open", {"url": "x"}, True),
    ],
)
def test_permits(role, tool, params, allowed):
    assert permits(REGISTRY, role, tool, params) is allowed


@pytest.mark.parametrize("find", [t.name for t in REGISTRY if t.name.startswith("find_")])
def test_a_find_is_judged_by_its_action(find):
    assert permits(REGISTRY, "read", find, {}) is True
    assert permits(REGISTRY, "read", find, {"action": "click"}) is False
    assert permits(REGISTRY, [find], find, {"action": "click"}) is False
    assert permits(REGISTRY, [find, "click"], find, {"action": "click"}) is True
    assert permits(REGISTRY, ["click"], find, {"action": "click"}) is False


@pytest.mark.parametrize("role", ["read", ["get_url", "batch"]])
@pytest.mark.parametrize(
    "params", [{"commands": "nope"}, {"commands": [{"tool": "batch", "params": BATCH_OF_READS}]}]
)
def test_a_malformed_batch_is_an_error_not_a_pass(role, params):
    with pytest.raises(BrowserdError):
        permits(REGISTRY, role, "batch", params)


def test_approval_messages():
    assert APPROVAL.match("approve K7Q2XM")[2] == "K7Q2XM"
    assert APPROVAL.match("  Deny k7q2xm ")[1].lower() == "deny"
    assert APPROVAL.match("approve") is None
    assert APPROVAL.match("approve K7Q2XM and click") is None


def test_text_or_json():
    assert is_text("click @e2") and not is_text('  {"tool": "get_url"}')
