"""NIP-01: canonical serialisation, id, signing and strict verification."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from nostr_browserd.nostr.errors import NostrError
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import (
    Auth,
    Closed,
    Eose,
    EventFrame,
    InvalidEvent,
    Notice,
    Ok,
    RelayMessageError,
    check_shape,
    event_id,
    finalize_event,
    is_valid,
    parse_relay_message,
    req_message,
    serialize,
    verify_event,
)

SK = bytes.fromhex("0beebd062ec8735f4243466049d7747ef5d6594ee838de147f8aab842b15e273")


def _event(**over: object) -> dict:
    ev = finalize_event(
        {"kind": 1, "content": "hello", "tags": [["t", "x"]], "created_at": 1700000000}, SK
    )
    ev.update(over)
    return ev


def test_serialize_is_canonical() -> None:
    pk = "a" * 64
    s = serialize(pk, 1, 1, [["p", "b" * 64]], 'he said "hi"\n\u00e9\u2028\x01')
    assert s == (f'[0,"{pk}",1,1,[["p","{"b" * 64}"]],"he said \\"hi\\"\\n\u00e9\u2028\\u0001"]')
    assert (
        event_id(pk, 1, 1, [["p", "b" * 64]], "x")
        == hashlib.sha256(serialize(pk, 1, 1, [["p", "b" * 64]], "x").encode()).hexdigest()
    )


def test_known_event_id() -> None:
    # The NIP-59 seal example from the spec: a real event with a known id.
    with open("tests/vectors/giftwrap_examples.json") as f:
        seal = json.load(f)["nip59_seal"]
    assert (
        event_id(seal["pubkey"], seal["created_at"], seal["kind"], seal["tags"], seal["content"])
        == seal["id"]
    )
    verify_event(seal)


def test_finalize_and_verify() -> None:
    ev = _event()
    assert ev["pubkey"] == public_key_hex(SK)
    verify_event(ev)
    assert is_valid(ev)


def test_defaults() -> None:
    ev = finalize_event({"kind": 1, "content": ""}, generate_secret())
    assert ev["tags"] == [] and isinstance(ev["created_at"], int)
    verify_event(ev)


def test_tampered_id_rejected() -> None:
    ev = _event()
    ev["content"] = "tampered"
    with pytest.raises(InvalidEvent, match="id mismatch"):
        verify_event(ev)


def test_forged_id_rejected() -> None:
    ev = _event()
    ev["id"] = "0" * 64
    with pytest.raises(InvalidEvent, match="id mismatch"):
        verify_event(ev)


def test_bad_signature_rejected() -> None:
    ev = _event()
    ev["sig"] = ev["sig"][:-2] + ("00" if ev["sig"][-2:] != "00" else "01")
    with pytest.raises(InvalidEvent, match="bad signature"):
        verify_event(ev)


def test_signature_by_other_key_rejected() -> None:
    ev = _event()
    other = finalize_event(
        {"kind": 1, "content": "hello", "tags": [["t", "x"]], "created_at": 1700000000},
        generate_secret(),
    )
    ev["sig"] = other["sig"]
    with pytest.raises(InvalidEvent, match="bad signature"):
        verify_event(ev)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("id", "A" * 64, "id"),
        ("id", "a" * 63, "id"),
        ("pubkey", "g" * 64, "pubkey"),
        ("sig", "a" * 127, "sig"),
        ("kind", True, "kind"),
        ("kind", "1", "kind"),
        ("kind", 1.0, "kind"),
        ("kind", -1, "kind"),
        ("created_at", False, "created_at"),
        ("created_at", "1700000000", "created_at"),
        ("created_at", 1.5, "created_at"),
        ("tags", {}, "tags"),
        ("tags", [["p", 1]], "tag 0"),
        ("tags", ["p"], "tag 0"),
        ("content", None, "content"),
        ("content", 5, "content"),
    ],
)
def test_malformed_fields_rejected(field: str, value: object, reason: str) -> None:
    ev = _event(**{field: value})
    with pytest.raises(InvalidEvent, match=reason):
        verify_event(ev)
    assert not is_valid(ev)


def test_missing_field_and_non_dict() -> None:
    ev = _event()
    del ev["sig"]
    with pytest.raises(InvalidEvent, match="missing field"):
        check_shape(ev)
    for junk in (None, [], "event", 3):
        with pytest.raises(InvalidEvent):
            verify_event(junk)


def test_lone_surrogate_is_invalid_not_crash() -> None:
    ev = _event()
    ev["content"] = "\ud800"
    with pytest.raises(InvalidEvent):
        verify_event(ev)


def test_verify_does_not_mutate() -> None:
    ev = _event()
    before = copy.deepcopy(ev)
    verify_event(ev)
    assert ev == before


def test_req_message() -> None:
    assert json.loads(req_message("s", {"kinds": [1]})) == ["REQ", "s", {"kinds": [1]}]


# -- relay → client frames, without a socket ------------------------------------------


def test_relay_messages_are_typed() -> None:
    event = {"id": "x"}
    assert parse_relay_message(json.dumps(["EVENT", "s", event])) == EventFrame("s", event)
    assert parse_relay_message('["EOSE", "s"]') == Eose("s")
    assert parse_relay_message('["CLOSED", "s", "auth-required: x"]') == Closed(
        "s", "auth-required: x"
    )
    assert parse_relay_message(b'["OK", "e", true, ""]') == Ok("e", True, "")
    assert parse_relay_message('["NOTICE", "hi"]') == Notice("hi")
    assert parse_relay_message('["AUTH", "c"]') == Auth("c")


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 60000,  # RecursionError in json.loads
        '["EVENT", "s", ' + '{"a":' * 40 + "1" + "}" * 40 + "]",
        "not json",
        b"\xff\xfe",
        "[]",
        '["OK", "e", "true", ""]',
        '["AUTH", "' + "c" * 301 + '"]',
        '["EVENT", "s", "not an event"]',
        '["COUNT", "s", {"count": 1}]',
    ],
    ids=["deep", "deep-event", "junk", "bytes", "empty", "ok-str", "long-auth", "event", "count"],
)
def test_hostile_frames_raise_relay_message_error_only(raw: str | bytes) -> None:
    with pytest.raises(RelayMessageError) as caught:
        parse_relay_message(raw)
    assert isinstance(caught.value, NostrError) and isinstance(caught.value, ValueError)
