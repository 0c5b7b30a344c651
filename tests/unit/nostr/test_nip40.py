"""NIP-40 expiration."""

from __future__ import annotations

from nostr_browserd.nostr.nip40 import expiration, expiration_tag, is_expired


def test_expiration() -> None:
    ev = {"tags": [["p", "x"], expiration_tag(100), ["expiration", "200"]]}
    assert expiration_tag(100) == ["expiration", "100"]
    assert expiration(ev) == 100
    assert is_expired(ev, now=100) and is_expired(ev, now=101)
    assert not is_expired(ev, now=99)
    assert is_expired(ev)


def test_no_or_malformed_expiration() -> None:
    assert expiration({"tags": []}) is None
    assert not is_expired({"tags": []})
    for bad in (["expiration"], ["expiration", "soon"], ["expiration", "-5"], ["expiration", "١٢"]):
        assert expiration({"tags": [bad]}) is None
    assert not is_expired({"tags": [["expiration", str(2**40)]]})
