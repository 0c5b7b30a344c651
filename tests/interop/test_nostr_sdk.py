"""Cross-implementation: our NIP-01/04/06/19/44/59/17 against rust-nostr (nostr-sdk 0.45)."""

from __future__ import annotations

import json

import nostr_sdk as n
import pytest

from nostr_browserd.nostr import nip04, nip06, nip17, nip19, nip44, nip59
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import finalize_event, verify_event
from nostr_browserd.nostr.signer import KeySigner

TEXTS = ["a", "hello nostr", 'héllo 🌍 \n\t"quoted" \\', "x" * 5000, "\u2028\u0001\u007f"]


def _sdk_keys(sk: bytes) -> n.Keys:
    return n.Keys(n.SecretKey.parse(sk.hex()))


def test_same_public_key_and_bech32() -> None:
    sk = generate_secret()
    keys = _sdk_keys(sk)
    assert keys.public_key().to_hex() == public_key_hex(sk)
    assert keys.public_key().to_bech32() == nip19.npub_encode(public_key_hex(sk))
    assert keys.secret_key().to_bech32() == nip19.nsec_encode(sk)
    assert nip19.decode_npub(keys.public_key().to_bech32()) == public_key_hex(sk)


def test_nprofile_and_nevent_both_ways() -> None:
    pk = public_key_hex(generate_secret())
    ours = nip19.nprofile_encode(pk, ["wss://r.example.com"])
    theirs = n.Nip19Profile.from_bech32(ours)
    assert theirs.public_key().to_hex() == pk
    assert [str(r) for r in theirs.relays()] == ["wss://r.example.com"]
    assert nip19.decode_nprofile(theirs.to_bech32()) == (pk, ["wss://r.example.com"])
    ev = finalize_event({"kind": 1, "content": "x"}, generate_secret())
    sdk_ev = n.Event.from_json(json.dumps(ev))
    nevent = n.Nip19Event.from_event(sdk_ev).to_bech32()
    decoded = nip19.decode_nevent(nevent)
    assert decoded["id"] == ev["id"]
    ours_nevent = nip19.nevent_encode(
        ev["id"], ["wss://r.example.com"], author=ev["pubkey"], kind=1
    )
    back = n.Nip19Event.from_bech32(ours_nevent)
    assert back.event_id().to_hex() == ev["id"]
    assert back.author().to_hex() == ev["pubkey"]
    assert back.kind().as_u16() == 1


@pytest.mark.parametrize("content", TEXTS)
def test_events_verify_both_ways(content: str) -> None:
    tags = [["p", public_key_hex(generate_secret())], ["t", "ünïcode"]]
    ours = finalize_event({"kind": 1, "content": content, "tags": tags}, generate_secret())
    sdk_ev = n.Event.from_json(json.dumps(ours))
    assert sdk_ev.verify()
    assert sdk_ev.id().to_hex() == ours["id"]
    keys = n.Keys.generate()
    theirs = n.EventBuilder(n.Kind(1), content).finalize(keys)
    verify_event(json.loads(theirs.as_json()))


@pytest.mark.parametrize("text", TEXTS)
def test_nip04_both_ways(text: str) -> None:
    a, b = generate_secret(), generate_secret()
    ka, kb = _sdk_keys(a), _sdk_keys(b)
    ours = nip04.encrypt(a, public_key_hex(b), text)
    assert n.nip04_decrypt(kb.secret_key(), ka.public_key(), ours) == text
    theirs = n.nip04_encrypt(ka.secret_key(), kb.public_key(), text)
    assert nip04.decrypt(b, public_key_hex(a), theirs) == text


@pytest.mark.parametrize("text", TEXTS)
def test_nip44_both_ways(text: str) -> None:
    a, b = generate_secret(), generate_secret()
    ka, kb = _sdk_keys(a), _sdk_keys(b)
    ours = nip44.encrypt(text, nip44.conversation_key(a, public_key_hex(b)))
    assert n.nip44_decrypt(kb.secret_key(), ka.public_key(), ours) == text
    theirs = n.nip44_encrypt(ka.secret_key(), kb.public_key(), text, n.Nip44Version.V2)
    assert nip44.decrypt(theirs, nip44.conversation_key(b, public_key_hex(a))) == text


async def test_our_gift_wrap_unwrapped_by_sdk() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    wraps = await nip17.make_dm(alice, [bob.pubkey], "hola from python")
    wrap = dict(wraps)[bob.pubkey]
    bob_keys = _sdk_keys(bob.secret)
    unwrapped = n.UnwrappedGift.from_gift_wrap(bob_keys, n.Event.from_json(json.dumps(wrap)))
    assert unwrapped.sender().to_hex() == alice.pubkey
    rumor = unwrapped.rumor()
    assert rumor.content() == "hola from python"
    assert rumor.kind().as_u16() == 14
    assert rumor.author().to_hex() == alice.pubkey
    # And the self-copy opens for the sender.
    mine = dict(wraps)[alice.pubkey]
    u2 = n.UnwrappedGift.from_gift_wrap(
        _sdk_keys(alice.secret), n.Event.from_json(json.dumps(mine))
    )
    assert u2.rumor().content() == "hola from python"


async def test_sdk_gift_wrap_unwrapped_by_us() -> None:
    alice_keys = n.Keys.generate()
    bob = KeySigner.generate()
    wrap = n.nip17_make_private_msg(alice_keys, n.PublicKey.parse(bob.pubkey), "hola from rust")
    opened = await nip17.open_dm(json.loads(wrap.as_json()), bob, kinds={14})
    assert opened.sender == alice_keys.public_key().to_hex()
    assert opened.rumor["content"] == "hola from rust"
    assert opened.rumor["kind"] == 14
    assert ["p", bob.pubkey] in opened.rumor["tags"]


async def test_sdk_nip59_wrap_of_any_rumor_unwrapped_by_us() -> None:
    alice_keys = n.Keys.generate()
    bob = KeySigner.generate()
    rumor_json = json.dumps(
        nip59.make_rumor(alice_keys.public_key().to_hex(), 25910, '{"jsonrpc":"2.0"}', [])
    )
    rumor = n.UnsignedEvent.from_json(rumor_json)
    wrap = n.nip59_make_gift_wrap(alice_keys, n.PublicKey.parse(bob.pubkey), rumor)
    opened = await nip59.unwrap(json.loads(wrap.as_json()), bob)
    assert opened.sender == alice_keys.public_key().to_hex()
    assert opened.rumor == json.loads(rumor_json)


def test_nip06_matches_sdk() -> None:
    m = nip06.generate_mnemonic()
    for account in (0, 1, 7):
        ours = nip06.secret_from_mnemonic(m, "pass", account)
        theirs = n.Keys.from_mnemonic(m, "pass", account)
        assert theirs.secret_key().to_hex() == ours.hex()
