"""ask's model gets a delta for a tab it was shown a snapshot of in this turn, and only then;
a snapshot of another tab is whole, leaving out no header the model has not read."""

from __future__ import annotations

from nostr_browserd.agent.tools import Snapshots


def ok(**data: object) -> dict[str, object]:
    return {"success": True, "data": data}


def test_the_first_snapshot_is_whole_and_the_next_of_that_tab_a_delta() -> None:
    seen = Snapshots()
    assert seen.params("snapshot", {"interactive": True}) == {"interactive": True, "full": True}
    seen.saw(ok(snapshot="- button", tab="t1"))
    seen.saw(ok(verified=True, tab="t1"))  # a click in between
    assert seen.params("snapshot", {"interactive": True}) == {"interactive": True, "delta": True}
    assert seen.params("click", {"ref": "@e2"}) == {"ref": "@e2"}


def test_the_model_may_ask_for_the_whole_page() -> None:
    seen = Snapshots()
    seen.saw(ok(snapshot="- button", tab="t1"))
    assert seen.params("snapshot", {"delta": False}) == {"delta": False}


def test_another_tab_or_a_failed_snapshot_gives_the_whole_page() -> None:
    seen = Snapshots()
    seen.saw({"success": False, "error": {"code": "TIMEOUT"}})
    assert seen.params("snapshot", {}) == {"full": True}
    seen.saw(ok(snapshot="- button", tab="t1"))
    seen.saw(ok(tab="t2", url="about:blank"))  # tab_new: t2 is active, never snapshotted
    assert seen.params("snapshot", {}) == {"full": True}
    seen.saw(ok(tab="t1"))  # back to t1
    assert seen.params("snapshot", {})["delta"] is True
