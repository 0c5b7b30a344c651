"""The shares of the daemon's machinery (capacity.py): one owner's claims never take what
another needs, and every refusal says which bound it met."""

from __future__ import annotations

import asyncio

import pytest

from nostr_browserd.capacity import Capacity
from nostr_browserd.errors import BrowserdError, ErrorCode


async def test_an_owner_past_its_share_is_refused_and_others_are_not():
    capacity = Capacity("file fetches", total=10, per_owner=2)
    held = [await capacity.claim("a"), await capacity.claim("a")]
    with pytest.raises(BrowserdError) as refused:
        await capacity.claim("a")
    assert refused.value.code == ErrorCode.BUSY
    assert "You have 2 file fetches under way" in refused.value.message
    other = await capacity.claim("b")  # served as before
    held[0]()
    held[0]()  # a second call frees nothing more
    again = await capacity.claim("a")
    assert capacity.in_use == 3
    for release in (held[1], other, again):
        release()
    assert capacity.in_use == 0


async def test_the_total_is_never_passed():
    capacity = Capacity("name lookups", total=3, per_owner=2)
    held = [await capacity.claim(owner) for owner in ("a", "a", "b")]
    with pytest.raises(BrowserdError, match="The daemon's 3 name lookups are all under way"):
        await capacity.claim("c")
    held[2]()
    assert capacity.in_use == 2
    (await capacity.claim("c"))()


async def test_a_claim_that_waits_waits_in_its_owners_queue_only():
    capacity = Capacity("name lookups", total=10, per_owner=1)
    first = await capacity.claim("a")
    waiting = asyncio.ensure_future(capacity.claim("a", wait=30))
    async with capacity.slot("b"):  # nobody waits behind a's queue
        pass
    assert not waiting.done()
    first()
    (await waiting)()
    stuck = await capacity.claim("a")
    with pytest.raises(BrowserdError, match="You have 1 name lookups under way"):
        await capacity.claim("a", wait=0.01)
    stuck()
    assert capacity.in_use == 0
