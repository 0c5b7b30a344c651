"""NIP-42 AUTH events."""

from __future__ import annotations

import pytest

from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip01 import finalize_event, now
from nostr_browserd.nostr.nip42 import AuthError, auth_template, same_relay, verify_auth

URL = "wss://relay.example.com"


def _auth(url: str = URL, challenge: str = "c1", **over: object) -> dict:
    t = auth_template(url, challenge)
    t.update(over)
    return finalize_event(t, generate_secret())


def test_template() -> None:
    t = auth_template(URL, "abc")
    assert t["kind"] == 22242 and t["content"] == ""
    assert t["tags"] == [["relay", URL], ["challenge", "abc"]]


def test_verify_ok_with_normalised_url() -> None:
    verify_auth(_auth(URL + "/"), "WSS://Relay.Example.com:443", "c1")
    assert same_relay("ws://h:80/", "ws://h")
    assert not same_relay("ws://h:7447", "ws://h:7448")


@pytest.mark.parametrize(
    ("event_kw", "reason"),
    [
        ({"challenge": "other"}, "challenge"),
        ({"url": "wss://evil.example.com"}, "relay"),
        ({"created_at": now() - 3600}, "created_at"),
        ({"kind": 1}, "kind"),
    ],
)
def test_verify_rejects(event_kw: dict, reason: str) -> None:
    kw = dict(event_kw)
    url = kw.pop("url", URL)
    challenge = kw.pop("challenge", "c1")
    with pytest.raises(AuthError, match=reason):
        verify_auth(_auth(url, challenge, **kw), URL, "c1")


def test_bad_signature() -> None:
    ev = _auth()
    ev["sig"] = "00" * 64
    with pytest.raises(AuthError, match="signature"):
        verify_auth(ev, URL, "c1")
