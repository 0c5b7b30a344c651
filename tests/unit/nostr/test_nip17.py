"""NIP-17 private DMs: the spec's two example gift wraps, fan-out, reply tags, inbox relays."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.nostr import nip17, nip19
from nostr_browserd.nostr.nip59 import UnwrapError
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.paths import TESTS

EX = json.loads((TESTS / "vectors" / "giftwrap_examples.json").read_text())
ABOUT = EX["_about"]["nip17"]
SENDER = KeySigner(nip19.decode_nsec(ABOUT["sender_nsec"]))
RECEIVER = KeySigner(nip19.decode_nsec(ABOUT["receiver_nsec"]))


@pytest.mark.parametrize("index", [0, 1])
async def test_spec_examples(index: int) -> None:
    wrap = EX["nip17_wraps"][index]
    assert wrap["id"] == ABOUT["wrap_ids"][index]
    assert RECEIVER.pubkey == ABOUT["receiver_pubkey"]
    # The first wrap is addressed to the receiver, the second is the sender's own copy.
    owner = {RECEIVER.pubkey: RECEIVER, SENDER.pubkey: SENDER}[wrap["tags"][0][1]]
    opened = await nip17.open_dm(wrap, owner, kinds={14})
    assert opened.sender == SENDER.pubkey
    rumor = opened.rumor
    assert rumor["kind"] == ABOUT["rumor_kind"]
    assert rumor["content"] == ABOUT["rumor_content"]
    assert rumor["created_at"] == ABOUT["rumor_created_at"]
    assert rumor["tags"] == ABOUT["rumor_tags"]
    assert rumor["pubkey"] == SENDER.pubkey


async def test_both_examples_carry_the_same_rumor() -> None:
    a = await nip17.open_dm(EX["nip17_wraps"][0], RECEIVER)
    b = await nip17.open_dm(EX["nip17_wraps"][1], SENDER)
    assert a.rumor == b.rumor


async def test_make_dm_fan_out_and_tags() -> None:
    alice, bob, carol = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    reply = "ab" * 32
    out = await nip17.make_dm(
        alice, [bob.pubkey, carol.pubkey], "group hi", reply_to=reply, tags=[["subject", "t"]]
    )
    assert [r for r, _ in out] == [bob.pubkey, carol.pubkey, alice.pubkey]
    rumors = []
    for who, signer in ((bob.pubkey, bob), (carol.pubkey, carol), (alice.pubkey, alice)):
        wrap = dict(out)[who]
        assert wrap["tags"][0] == ["p", who]
        opened = await nip17.open_dm(wrap, signer)
        assert opened.sender == alice.pubkey
        rumors.append(opened.rumor)
        # Nobody else can open it.
        other = bob if signer is not bob else carol
        with pytest.raises(UnwrapError):
            await nip17.open_dm(wrap, other)
    assert rumors[0] == rumors[1] == rumors[2]
    assert rumors[0]["kind"] == 14 and rumors[0]["content"] == "group hi"
    assert rumors[0]["tags"] == [
        ["p", bob.pubkey],
        ["p", carol.pubkey],
        ["subject", "t"],
        ["e", reply],
    ]


async def test_make_dm_without_self_copy_and_kind_filter() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    out = await nip17.make_dm(alice, [bob.pubkey], "x", copy_to_self=False, kind=15)
    assert len(out) == 1
    with pytest.raises(UnwrapError, match="kind 15"):
        await nip17.open_dm(out[0][1], bob, kinds={14})


async def test_make_dm_rejects_bad_recipients() -> None:
    alice = KeySigner.generate()
    with pytest.raises(ValueError):
        await nip17.make_dm(alice, [], "x")
    with pytest.raises(ValueError):
        await nip17.make_dm(alice, ["npub1notahexkey"], "x")
    with pytest.raises(ValueError, match="reply_to"):
        await nip17.make_dm(alice, [alice.pubkey], "x", reply_to="note1xyz")


def test_inbox_relays_template() -> None:
    t = nip17.inbox_relays_event_template(["wss://a", "wss://b", "wss://a"])
    assert t["kind"] == 10050
    assert t["tags"] == [["relay", "wss://a"], ["relay", "wss://b"]]
    assert nip17.inbox_relays({**t, "pubkey": "x"}) == ["wss://a", "wss://b"]
