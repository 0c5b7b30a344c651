"""Property tests (hypothesis): round trips hold, and decoders fed garbage fail only with
their own module's error, never with anything else."""

from __future__ import annotations

import asyncio
import functools
import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nostr_browserd.nostr import nip04, nip06, nip19, nip44, nip59
from nostr_browserd.nostr.keys import CURVE_N, public_key_hex
from nostr_browserd.nostr.nip01 import InvalidEvent, finalize_event, is_valid, verify_event
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import resigned, verifies_elsewhere

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

secrets_ = st.integers(min_value=1, max_value=CURVE_N - 1).map(lambda i: i.to_bytes(32, "big"))
hex32 = st.binary(min_size=32, max_size=32).map(bytes.hex)
texts = st.text(max_size=300)
nonempty = st.text(min_size=1, max_size=300)
tag = st.lists(st.text(max_size=20), min_size=1, max_size=4)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=8)
    ),
    max_leaves=20,
)

sigs = st.binary(min_size=64, max_size=64).map(bytes.hex)
signed = st.builds(
    lambda sk, content: finalize_event({"kind": 1, "content": content, "tags": []}, sk),
    secrets_,
    texts,
)
# A genuine event with another signature: a drawn one, or a valid one of another event.
forged_sig = st.tuples(signed, sigs | signed.map(lambda e: e["sig"])).map(
    lambda pair: {**pair[0], "sig": pair[1]}
)
ALICE, BOB = KeySigner(b"\x01" * 32), KeySigner(b"\x02" * 32)
# A genuine gift wrap whose seal or wrap (or neither) carries a drawn signature.
forged_wraps = st.builds(
    functools.partial(resigned, ALICE, BOB.pubkey),
    nonempty,
    st.none() | sigs,
    st.none() | sigs,
)

_PUB = {}


def _pub(sk: bytes) -> str:
    if sk not in _PUB:
        _PUB[sk] = public_key_hex(sk)
    return _PUB[sk]


# -- round trips ----------------------------------------------------------------------


@FAST
@given(secrets_, secrets_, texts)
def test_nip04_round_trip(a: bytes, b: bytes, text: str) -> None:
    payload = nip04.encrypt(a, _pub(b), text)
    assert nip04.decrypt(b, _pub(a), payload) == text


@FAST
@given(secrets_, secrets_, nonempty)
def test_nip44_round_trip(a: bytes, b: bytes, text: str) -> None:
    payload = nip44.encrypt(text, nip44.conversation_key(a, _pub(b)))
    assert nip44.decrypt(payload, nip44.conversation_key(b, _pub(a))) == text


@FAST
@given(st.integers(min_value=1, max_value=65535))
def test_nip44_padding_properties(n: int) -> None:
    padded = nip44.calc_padded_len(n)
    assert n <= padded and padded >= 32
    assert nip44.unpad(nip44.pad("a" * n)) == "a" * n


@FAST
@given(
    hex32,
    secrets_,
    st.lists(st.text(min_size=1, max_size=40), max_size=3),
    hex32,
    st.none() | st.integers(min_value=0, max_value=2**32 - 1),
)
def test_nip19_round_trips(
    h: str, sk: bytes, relays: list[str], author: str, kind: int | None
) -> None:
    assume(all(len(r.encode()) <= 255 for r in relays))
    assert nip19.decode_npub(nip19.npub_encode(h)) == h
    assert nip19.decode_note(nip19.note_encode(h)) == h
    assert nip19.decode_nsec(nip19.nsec_encode(sk)) == sk
    assert nip19.parse_secret(nip19.nsec_encode(sk)) == sk
    assert nip19.decode_nprofile(nip19.nprofile_encode(h, relays)) == (h, relays)
    assert nip19.decode_nevent(nip19.nevent_encode(h, relays, author=author, kind=kind)) == {
        "id": h,
        "relays": relays,
        "author": author,
        "kind": kind,
    }


@FAST
@given(hex32, st.integers(min_value=0), st.integers(min_value=0, max_value=200))
def test_nip19_single_character_typo_is_caught(h: str, pos: int, shift: int) -> None:
    s = nip19.npub_encode(h)
    i = 5 + pos % (len(s) - 5)
    charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
    new = charset[(charset.index(s[i]) + 1 + shift % 31) % 32]
    typo = s[:i] + new + s[i + 1 :]
    try:
        decoded = nip19.decode_npub(typo)
    except nip19.Bech32Error:
        return
    raise AssertionError(f"typo accepted: {decoded}")


@FAST
@given(
    secrets_,
    st.integers(min_value=0, max_value=65535),
    texts,
    st.lists(tag, max_size=5),
    st.integers(min_value=0, max_value=2**40),
)
def test_event_round_trip_and_any_change_breaks_it(
    sk: bytes, kind: int, content: str, tags: list[list[str]], created_at: int
) -> None:
    ev = finalize_event(
        {"kind": kind, "content": content, "tags": tags, "created_at": created_at}, sk
    )
    verify_event(json.loads(json.dumps(ev)))
    for field, value in (
        ("content", content + "x"),
        ("kind", (kind + 1) % 65536),
        ("created_at", created_at + 1),
        ("tags", [*tags, ["x"]]),
    ):
        assert not is_valid({**ev, field: value})


@settings(max_examples=15, deadline=None)
@given(nonempty, st.integers(min_value=0, max_value=65535), st.lists(tag, max_size=3))
def test_gift_wrap_round_trip(content: str, kind: int, tags: list[list[str]]) -> None:
    alice, bob = KeySigner.generate(), KeySigner.generate()

    async def go() -> None:
        rumor = nip59.make_rumor(alice.pubkey, kind, content, tags)
        opened = await nip59.unwrap(await nip59.wrap(rumor, alice, bob.pubkey), bob)
        assert opened.rumor == rumor and opened.sender == alice.pubkey

    asyncio.run(go())


# -- garbage in, the module's own error out (the decoders at scale: tests/fuzz) -----------


@settings(max_examples=300, deadline=None)
@given(
    json_values
    | st.fixed_dictionaries(
        {
            "id": hex32 | json_values,
            "pubkey": hex32 | json_values,
            "sig": json_values,
            "kind": st.integers() | json_values,
            "created_at": st.integers() | json_values,
            "tags": st.lists(st.lists(st.text(max_size=5))) | json_values,
            "content": texts | json_values,
        }
    )
    | signed
    | forged_sig
)
def test_verify_event_garbage(value: object) -> None:
    try:
        verify_event(value)
    except InvalidEvent:
        return
    assert verifies_elsewhere(value), "accepted an event whose signature is bad"


@settings(max_examples=100, deadline=None)
@given(json_values | forged_wraps)
def test_unwrap_garbage(value: object) -> None:
    try:
        opened = asyncio.run(nip59.unwrap(value, BOB))  # type: ignore[arg-type]
    except nip59.UnwrapError:
        return
    assert verifies_elsewhere(opened.wrap) and verifies_elsewhere(opened.seal)


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=200)
    | st.lists(st.sampled_from(["abandon", "zoo", "about", "xyz", "Ab"]), max_size=25).map(" ".join)
)
def test_mnemonic_garbage(words: str) -> None:
    try:
        nip06.validate_mnemonic(words)
    except nip06.MnemonicError as exc:
        # The sampled words never appear in a message (the message's own words are fixed).
        for w in ("abandon", "zoo", "about", "xyz"):
            assert w not in str(exc).lower()
