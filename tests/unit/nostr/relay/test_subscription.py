"""One subscription: what reaches its reader (verified, matching, once) and what a reconnect
asks for again, fed directly, as the pool feeds it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip01 import finalize_event
from nostr_browserd.nostr.relay.subscription import SINCE_MARGIN, Subscription

A, B = "wss://a.example", "wss://b.example"


def note(content: str, created_at: int = 1_700_000_000, kind: int = 1) -> dict[str, Any]:
    template = {"kind": kind, "content": content, "tags": [], "created_at": created_at}
    return finalize_event(template, generate_secret())


def subscription(closed: list[Subscription] | None = None, **options: Any) -> Subscription:
    settings = {"advance_since": True, "queue_size": 100, "dedup_size": 100, **options}
    return Subscription(
        (closed if closed is not None else []).append, "s", [{"kinds": [1]}], **settings
    )


async def read_out(sub: Subscription) -> list[tuple[str, bool]]:
    """Every waiting event's content and whether it was stored, as a reader gets them."""
    sub.close()
    return [(event["content"], sub.stored) async for event in sub]


async def test_what_reaches_the_reader_is_verified_matching_and_once() -> None:
    sub, counts = subscription(), Counter[str]()
    good, other_kind = note("good"), note("kind 4", kind=4)
    forged = {**note("forged"), "content": "changed"}
    for url, event in [(A, good), (B, good), (A, forged), (A, other_kind)]:
        sub.receive(url, event, counts)
    assert [content for content, _ in await read_out(sub)] == ["good"]
    assert counts == {"events": 3, "duplicates": 1, "invalid": 1, "unmatched": 1}


async def test_an_event_is_stored_until_its_relay_sent_eose() -> None:
    sub, counts = subscription(), Counter[str]()
    sub.receive(A, note("before"), counts)
    sub.eose.add(A)
    sub.receive(A, note("after"), counts)
    assert await read_out(sub) == [("before", True), ("after", False)]


def test_a_reconnect_asks_from_the_newest_event_that_relay_gave() -> None:
    sub, counts = subscription(), Counter[str]()
    assert sub.filters_for(A) == [{"kinds": [1]}]  # nothing seen: the filters as they are
    sub.receive(A, note("old", created_at=1_700_000_000), counts)
    sub.eose.add(A)
    assert sub.resent_to(A) == [{"kinds": [1], "since": 1_700_000_000 - SINCE_MARGIN}]
    assert A not in sub.eose  # what comes before the new EOSE is stored again
    assert sub.filters_for(B) == [{"kinds": [1]}]  # per relay


def test_gift_wraps_are_asked_for_unchanged() -> None:
    sub, counts = subscription(advance_since=False), Counter[str]()
    sub.receive(A, note("wrap"), counts)
    assert sub.resent_to(A) == [{"kinds": [1]}]


def test_close_tells_the_pool_once() -> None:
    closed: list[Subscription] = []
    sub = subscription(closed)
    sub.close()
    sub.close()
    assert closed == [sub] and sub.closed
