"""The lease decisions (daemon/placement.py), alone: times are given, no store, no clock."""

from __future__ import annotations

from collections import Counter

from nostr_browserd.daemon.placement import ASIDE_FORGET, LIVE_FRESH, Placement, preferred

LEASE = 15.0


def test_rendezvous_spreads_evenly_and_a_leaving_worker_moves_only_its_own_share():
    controllers = [f"{i:064x}" for i in range(3000)]
    three = ["w1", "w2", "w3"]
    share = Counter(preferred(c, three) for c in controllers)
    assert set(share) == set(three) and all(850 < n < 1150 for n in share.values()), share
    moved = [c for c in controllers if preferred(c, three) != preferred(c, ["w1", "w2"])]
    assert moved and all(preferred(c, three) == "w3" for c in moved)
    assert preferred("c", []) is None


def controller_preferring(worker: str, workers: list[str]) -> str:
    return next(f"{i:064x}" for i in range(100) if preferred(f"{i:064x}", workers) == worker)


def test_a_worker_counts_itself_live_unless_draining():
    placement = Placement("w2", LEASE)
    placement.read_live(["w1"], now=0.0)
    assert placement.live == ["w1", "w2"] and placement.others_live()
    placement.draining = True
    placement.read_live(["w1"], now=1.0)
    assert placement.live == ["w1"]
    placement.read_live([], now=2.0)
    assert not placement.others_live()


def test_a_free_controller_is_taken_by_its_preferred_worker_or_after_a_lease_period():
    placement = Placement("w1", LEASE)
    placement.read_live(["w1", "w2"], now=0.0)
    mine, theirs = (controller_preferring(w, ["w1", "w2"]) for w in ("w1", "w2"))
    assert placement.may_take(mine, waited=0.0, now=0.0)
    assert not placement.may_take(theirs, waited=LEASE - 0.1, now=0.0), "it may be merely slow"
    assert placement.may_take(theirs, waited=LEASE, now=0.0), "its preferred worker does not see it"
    placement.granted(theirs, asked=1.0)
    assert placement.may_take(theirs, waited=0.0, now=0.0), "held here: renewed here"


def test_the_live_workers_are_read_again_only_to_place_a_free_controller():
    placement = Placement("w1", LEASE)
    placement.read_live(["w1"], now=0.0)
    assert not placement.needs_live("c", waited=0.0, now=LIVE_FRESH)
    assert placement.needs_live("c", waited=0.0, now=LIVE_FRESH + 0.1)
    assert not placement.needs_live("c", waited=LEASE, now=LIVE_FRESH + 0.1), "taken anyway"
    placement.granted("c", asked=0.0)
    assert not placement.needs_live("c", waited=0.0, now=LIVE_FRESH + 0.1), "held"


def test_a_lease_is_fresh_for_a_third_of_it_from_when_it_was_asked_for():
    placement = Placement("w1", LEASE)
    assert not placement.fresh("c", now=0.0), "not held"
    assert placement.granted("c", asked=10.0), "newly held"
    assert placement.fresh("c", now=10.0 + LEASE / 3 - 0.01)
    assert not placement.fresh("c", now=10.0 + LEASE / 3)
    assert not placement.granted("c", asked=20.0), "renewed, not new"
    assert placement.fresh("c", now=20.0 + LEASE / 3 - 0.01)


def test_a_lease_missing_from_the_renewal_was_taken_by_another_worker():
    placement = Placement("w1", LEASE)
    for controller in ("a", "b", "c"):
        placement.granted(controller, asked=0.0)
    assert placement.renewed({"b", "x"}, asked=5.0) == ["a", "c"]
    assert set(placement.held) == {"b"}
    assert placement.fresh("b", now=5.0 + LEASE / 3 - 0.01), "renewed at 5"


def test_a_refused_lease_is_not_asked_for_again_until_it_may_be_free():
    placement = Placement("w1", LEASE)
    placement.read_live(["w1", "w2"], now=0.0)
    mine = controller_preferring("w1", ["w1", "w2"])
    placement.refused(mine, now=1.0)  # w2 holds it: it took it while w1 was away
    assert not placement.may_take(mine, waited=0.0, now=1.0 + LEASE / 3 - 0.1)
    assert placement.may_take(mine, waited=0.0, now=1.0 + LEASE / 3), "asked again in time"
    placement.refused(mine, now=10.0)
    assert placement.may_take(mine, waited=LEASE, now=10.0), "waited out the grace"
    placement.read_live(["w1"], now=10.5)  # w2 drained or died: its leases are free
    assert placement.may_take(mine, waited=0.0, now=10.5)
    placement.refused(mine, now=11.0)
    placement.granted(mine, asked=12.0)
    assert placement.may_take(mine, waited=0.0, now=12.0), "held here"


def test_a_seal_is_opened_only_where_its_senders_commands_may_run():
    """The others keep its wrap aside, sealed: the signature check and the second decryption
    are spent once per command, not once per worker."""
    placement = Placement("w1", LEASE)
    mine, theirs = (controller_preferring(w, ["w1", "w2", "w3"]) for w in ("w1", "w2"))
    assert placement.opens(theirs, now=0.0), "alone (the first second): every seal"
    placement.read_live(["w1", "w2", "w3"], now=0.0)
    assert placement.opens(mine, now=0.0), "free, and preferred here"
    assert not placement.opens(theirs, now=0.0), "free, and another worker's to take"
    placement.refused(mine, now=0.0)
    assert not placement.opens(mine, now=1.0), "preferred here, but another worker holds it"
    assert placement.opens(mine, now=LEASE / 3), "a refusal is trusted a third of a lease"
    placement.granted(theirs, asked=2.0)
    assert placement.opens(theirs, now=2.0), "held here (its worker left, or it waited)"
    placement.refused(mine, now=3.0)
    placement.read_live(["w1", "w3"], now=3.0)  # its holder died: asked again at once
    assert placement.opens(mine, now=3.0)
    placement.draining = True
    assert not placement.opens(theirs, now=3.0), "draining: nothing is admitted here"


def test_the_store_is_asked_about_kept_aside_messages_only_when_one_may_be_taken_here():
    """Between two questions to forget what the holders claimed, a worker that runs none of
    the kept-aside commands asks the store nothing about them."""
    placement = Placement("w1", LEASE)
    placement.read_live(["w1", "w2"], now=0.0)
    mine, theirs = (controller_preferring(w, ["w1", "w2"]) for w in ("w1", "w2"))
    assert not placement.ask_aside({theirs: 0.5}, asked=0.0, now=0.5), "another worker's"
    assert placement.ask_aside({theirs: 1.0}, asked=0.0, now=ASIDE_FORGET), "to forget"
    assert placement.ask_aside({theirs: LEASE}, asked=0.0, now=0.5), "waited out the grace"
    assert placement.ask_aside({theirs: 0.5, mine: 0.5}, asked=0.0, now=0.5), "free, preferred"
    placement.refused(mine, now=0.0)
    assert not placement.ask_aside({mine: 0.5}, asked=0.0, now=0.5), "its holder is live"
    placement.read_live(["w1"], now=0.6)  # w2 drained or died
    assert placement.ask_aside({theirs: 0.7}, asked=0.0, now=0.7), "it may be free now"
