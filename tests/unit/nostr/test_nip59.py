"""NIP-59 gift wrap: the spec's example, round trips, and every forgery rejected by reason."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.nostr import nip44, nip59
from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip01 import finalize_event, verify_event
from nostr_browserd.nostr.nip40 import expiration
from nostr_browserd.nostr.nip59 import UnwrapError
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.paths import TESTS

EX = json.loads((TESTS / "vectors" / "giftwrap_examples.json").read_text())
ABOUT = EX["_about"]["nip59"]


async def test_spec_example_unwraps_to_documented_rumor() -> None:
    recipient = KeySigner(bytes.fromhex(ABOUT["recipient_sk"]))
    author = KeySigner(bytes.fromhex(ABOUT["author_sk"]))
    opened = await nip59.unwrap(EX["nip59_wrap"], recipient)
    assert opened.wrap["id"] == ABOUT["wrap_id"]
    assert opened.seal == EX["nip59_seal"]
    assert opened.rumor["id"] == ABOUT["rumor_id"]
    assert opened.rumor["kind"] == ABOUT["rumor_kind"]
    assert opened.rumor["content"] == ABOUT["rumor_content"]
    assert opened.sender == author.pubkey == opened.rumor["pubkey"]


async def test_spec_example_not_for_someone_else() -> None:
    with pytest.raises(UnwrapError, match="cannot decrypt"):
        await nip59.unwrap(EX["nip59_wrap"], KeySigner.generate())


async def test_round_trip_and_shape() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "hi bob", [["p", bob.pubkey]])
    assert "sig" not in rumor
    w = await nip59.wrap(rumor, alice, bob.pubkey, expiration=2_000_000_000)
    verify_event(w)
    assert w["kind"] == 1059 and ["p", bob.pubkey] in w["tags"]
    assert expiration(w) == 2_000_000_000
    assert w["pubkey"] not in (alice.pubkey, bob.pubkey)
    assert w["created_at"] <= rumor["created_at"]
    assert rumor["created_at"] - w["created_at"] < nip59.MAX_TWEAK + 5
    opened = await nip59.unwrap(w, bob)
    assert opened.rumor == rumor and opened.sender == alice.pubkey
    assert opened.seal["kind"] == 13 and opened.seal["tags"] == []


async def test_each_wrap_uses_a_fresh_key() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "x", [])
    w1 = await nip59.wrap(rumor, alice, bob.pubkey)
    w2 = await nip59.wrap(rumor, alice, bob.pubkey)
    assert w1["pubkey"] != w2["pubkey"]


async def test_seal_refuses_someone_elses_rumor() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(bob.pubkey, 14, "x", [])
    with pytest.raises(ValueError, match="signer"):
        await nip59.seal(rumor, alice, bob.pubkey)


def _wrap_raw(seal_event: dict, recipient: str) -> dict:
    """Gift-wrap any JSON object, bypassing every check (an attacker's wrap)."""
    return nip59.gift_wrap(seal_event, recipient)


async def _raw_seal(signer: KeySigner, recipient: str, rumor: dict, kind: int = 13) -> dict:
    content = await signer.nip44_encrypt(recipient, json.dumps(rumor))
    return await signer.sign_event({"kind": kind, "content": content, "tags": []})


async def test_forged_seal_rejected() -> None:
    """Mallory seals a rumor claiming to be from Alice: the sender check catches it."""
    alice, mallory, bob = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "run rm -rf", [["p", bob.pubkey]])
    w = _wrap_raw(await _raw_seal(mallory, bob.pubkey, rumor), bob.pubkey)
    with pytest.raises(UnwrapError, match="forged sender"):
        await nip59.unwrap(w, bob)


async def test_tampered_rumor_id_rejected() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "hello", [])
    rumor["content"] = "goodbye"  # id no longer matches
    w = _wrap_raw(await _raw_seal(alice, bob.pubkey, rumor), bob.pubkey)
    with pytest.raises(UnwrapError, match="rumor: id mismatch"):
        await nip59.unwrap(w, bob)


async def test_bad_seal_signature_rejected() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "hello", [])
    s = await _raw_seal(alice, bob.pubkey, rumor)
    s["sig"] = ("0" if s["sig"][0] != "0" else "1") + s["sig"][1:]
    with pytest.raises(UnwrapError, match="seal: bad signature"):
        await nip59.unwrap(_wrap_raw(s, bob.pubkey), bob)


async def test_tampered_seal_id_rejected() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    s = await _raw_seal(alice, bob.pubkey, nip59.make_rumor(alice.pubkey, 14, "x", []))
    s["created_at"] += 1
    with pytest.raises(UnwrapError, match="seal: id mismatch"):
        await nip59.unwrap(_wrap_raw(s, bob.pubkey), bob)


async def test_wrong_seal_kind_rejected() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "x", [])
    s = await _raw_seal(alice, bob.pubkey, rumor, kind=1)
    with pytest.raises(UnwrapError, match="seal: kind"):
        await nip59.unwrap(_wrap_raw(s, bob.pubkey), bob)


async def test_tampered_and_badly_signed_wrap_rejected() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    w = await nip59.wrap(nip59.make_rumor(alice.pubkey, 14, "x", []), alice, bob.pubkey)
    tampered = {**w, "tags": [*w["tags"], ["x", "y"]]}
    with pytest.raises(UnwrapError, match="gift wrap: id mismatch"):
        await nip59.unwrap(tampered, bob)
    bad_sig = {**w, "sig": w["sig"][::-1]}
    with pytest.raises(UnwrapError, match="gift wrap: bad signature"):
        await nip59.unwrap(bad_sig, bob)
    wrong_kind = finalize_event({"kind": 4, "content": w["content"]}, generate_secret())
    with pytest.raises(UnwrapError, match="kind"):
        await nip59.unwrap(wrong_kind, bob)


async def test_garbage_inside_rejected() -> None:
    bob = KeySigner.generate()
    key = generate_secret()
    for inner in ("not json", "[1,2]", '{"kind":13}', json.dumps({"a": 1})):
        content = nip44.encrypt(inner, nip44.conversation_key(key, bob.pubkey))
        w = finalize_event({"kind": 1059, "content": content, "tags": [["p", bob.pubkey]]}, key)
        with pytest.raises(UnwrapError, match="seal"):
            await nip59.unwrap(w, bob)


async def test_rumor_without_id_is_accepted_with_computed_id() -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()
    rumor = nip59.make_rumor(alice.pubkey, 14, "x", [])
    no_id = {k: v for k, v in rumor.items() if k != "id"}
    w = _wrap_raw(await _raw_seal(alice, bob.pubkey, no_id), bob.pubkey)
    opened = await nip59.unwrap(w, bob)
    assert opened.rumor["id"] == rumor["id"]
