"""The n_signer over qrexec, against the stand-in tests/bin/qrexec-client-vm."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login import nsigner_wire as wire
from nostr_browserd.login.nsigner import NsignerSigner
from nostr_browserd.nostr.nip01 import verify_event
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.signers import NIP06, STANDIN_DIR, qrexec_standin_fixture  # noqa: F401

KEY = NIP06[0]


async def test_allow_serves_the_slot_key_and_verified_signatures(qrexec_standin) -> None:
    signer = NsignerSigner("nostr_signer", "qubes.NsignerRpc", 0)
    try:
        assert await signer.public_key() == KEY["public_key"]
        event = await signer.sign_event({"kind": 1, "content": "hi", "tags": [["t", "x"]]})
        verify_event(event)
        assert event["pubkey"] == KEY["public_key"] and event["content"] == "hi"
        peer = KeySigner.generate()
        for scheme in ("nip04", "nip44"):
            ct = await getattr(signer, f"{scheme}_encrypt")(peer.pubkey, "secret note")
            assert await getattr(peer, f"{scheme}_decrypt")(KEY["public_key"], ct) == (
                "secret note"
            )
            back = await getattr(peer, f"{scheme}_encrypt")(KEY["public_key"], "reply")
            assert await getattr(signer, f"{scheme}_decrypt")(peer.pubkey, back) == "reply"
    finally:
        await signer.aclose()


async def test_index_selects_another_slot(qrexec_standin) -> None:
    signer = NsignerSigner("nostr_signer", index=1)
    try:
        assert await signer.public_key() != KEY["public_key"]
    finally:
        await signer.aclose()


async def test_binary_is_configurable(qrexec_standin, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BrowserdError) as err:
        await NsignerSigner("nostr_signer").public_key()
    assert err.value.code is ErrorCode.SIGNER_ERROR and "qrexec-client-vm" in err.value.message
    qrexec_standin("allow")
    # An absolute path needs no PATH lookup (but the stand-in's python3 still does: give it
    # the running interpreter's directory, wherever the suite runs from).
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    signer = NsignerSigner("nostr_signer", binary=str(STANDIN_DIR / "qrexec-client-vm"))
    try:
        assert await signer.public_key() == KEY["public_key"]
    finally:
        await signer.aclose()


async def test_policy_refusal_is_refused(qrexec_standin) -> None:
    qrexec_standin("refuse")
    with pytest.raises(BrowserdError) as err:
        await NsignerSigner("nostr_signer").public_key()
    assert err.value.code is ErrorCode.REFUSED
    assert "policy" in err.value.message and "Request refused" in err.value.message


async def test_wrong_target_is_refused_by_policy(qrexec_standin, monkeypatch) -> None:
    monkeypatch.setenv("QREXEC_STANDIN_TARGET", "other_qube")
    with pytest.raises(BrowserdError) as err:
        await NsignerSigner("nostr_signer").public_key()
    assert err.value.code is ErrorCode.REFUSED


async def test_transport_failure_is_a_signer_error(qrexec_standin) -> None:
    qrexec_standin("fail")
    with pytest.raises(BrowserdError) as err:
        await NsignerSigner("nostr_signer").public_key()
    assert err.value.code is ErrorCode.SIGNER_ERROR and "could not reach" in err.value.message


async def test_hang_times_out_and_the_next_call_starts_afresh(qrexec_standin) -> None:
    # The limit covers the stand-in's start (a Python process importing coincurve) as well as
    # its answer, so it must be one a loaded machine keeps: 0.3 s was not (the answering call
    # after the hang timed out too).  The hang itself is waited for in full either way.
    qrexec_standin("hang")
    signer = NsignerSigner("nostr_signer", timeout=3)
    with pytest.raises(BrowserdError) as err:
        await signer.public_key()
    assert err.value.code is ErrorCode.TIMEOUT and "3 s" in err.value.message
    qrexec_standin("allow")
    try:
        assert await signer.public_key() == KEY["public_key"]
    finally:
        await signer.aclose()


async def test_garbage_is_a_signer_error(qrexec_standin) -> None:
    qrexec_standin("garbage")
    signer = NsignerSigner("nostr_signer")
    try:
        with pytest.raises(BrowserdError) as err:
            await signer.public_key()
        assert err.value.code is ErrorCode.SIGNER_ERROR and "not a JSON line" in err.value.message
    finally:
        await signer.aclose()


async def test_signature_by_another_key_is_rejected(qrexec_standin) -> None:
    qrexec_standin("wrongkey")
    signer = NsignerSigner("nostr_signer")
    try:
        assert await signer.public_key() == KEY["public_key"]
        with pytest.raises(BrowserdError) as err:
            await signer.sign_event({"kind": 1, "content": "hi"})
        assert err.value.code is ErrorCode.SIGNER_ERROR and "not the logged-in key" in str(
            err.value
        )
    finally:
        await signer.aclose()


@pytest.mark.parametrize(
    ("device", "service", "index"),
    [("", "s", 0), ("a b", "s", 0), ("x" * 32, "s", 0), ("q", "bad/svc", 0), ("q", "s", -1)],
)
def test_bad_names_are_refused_before_running_anything(device, service, index) -> None:
    with pytest.raises(BrowserdError) as err:
        NsignerSigner(device, service, index)
    assert err.value.code is ErrorCode.INVALID_PARAMS


def test_wire_round_trip_and_malformed_lines() -> None:
    line = wire.encode_request("7", "sign_event", ["{}"], 3)
    assert line.endswith(b"\n") and b'"index":3' in line
    assert wire.decode_reply(b'{"id":"7","result":"ok"}\n') == wire.WireReply("7", "ok", None)
    assert wire.decode_reply(b'{"id":"7","error":"no"}') == wire.WireReply("7", None, "no")
    for bad in [
        b"\xff",
        b"[]",
        b'{"id":7,"result":"x"}',
        b'{"id":"7"}',
        b'{"id":"7","result":"a","error":"b"}',
        b'{"id":"7","result":5}',
    ]:
        with pytest.raises(wire.WireError):
            wire.decode_reply(bad)
