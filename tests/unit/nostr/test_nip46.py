"""NIP-46 wire format: URIs, messages, permissions, content encryption (pure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nostr_browserd.nostr import nip46
from nostr_browserd.nostr.nip46 import Nip46Error, Permission, Request, Response
from nostr_browserd.nostr.signer import KeySigner

PK = "fa984bd7dbb282f07e16e7ae87b26a2a7b9b90b7246a44771f0cf5ae58018f52"
SECRET = "s3cr3t-token-123"


def test_parse_bunker_url() -> None:
    url = f"bunker://{PK}?relay=wss%3A%2F%2Fr1.example&relay=ws://127.0.0.1:7447&secret={SECRET}"
    ptr = nip46.parse_bunker_url(url)
    assert ptr.pubkey == PK
    assert ptr.relays == ("wss://r1.example", "ws://127.0.0.1:7447")
    assert ptr.secret == SECRET
    assert SECRET not in repr(ptr) and SECRET not in str(ptr) and "secret=set" in repr(ptr)
    assert nip46.parse_bunker_url(f"bunker://{PK}?relay=wss://r").secret is None


def test_bunker_url_round_trip() -> None:
    url = nip46.bunker_url(PK, ["wss://a.example/path?x=1", "ws://127.0.0.1:1"], "a&b=c")
    ptr = nip46.parse_bunker_url(url)
    assert ptr.relays == ("wss://a.example/path?x=1", "ws://127.0.0.1:1")
    assert ptr.secret == "a&b=c"


@pytest.mark.parametrize(
    "url",
    [
        f"nostrconnect://{PK}?relay=wss://r&secret={SECRET}",
        f"bunker://{PK[:-2]}?relay=wss://r&secret={SECRET}",
        f"bunker://{PK}?secret={SECRET}",
        f"bunker://{PK}?relay=https://r&secret={SECRET}",
        f"bunker://npub1xyz?relay=wss://r&secret={SECRET}",
        "",
    ],
)
def test_bad_bunker_urls_are_refused_without_echoing_the_secret(url: str) -> None:
    with pytest.raises(Nip46Error) as err:
        nip46.parse_bunker_url(url)
    assert SECRET not in str(err.value)


def test_nostrconnect_uri_round_trip() -> None:
    perms = nip46.parse_perms("sign_event:1,nip44_encrypt, sign_event:14")
    uri = nip46.nostrconnect_uri(PK, ["wss://r.example"], SECRET, perms, "nostr browserd")
    assert uri.startswith(f"nostrconnect://{PK}?relay=wss%3A%2F%2Fr.example&secret=")
    ptr = nip46.parse_nostrconnect_uri(uri)
    assert (ptr.client_pubkey, ptr.relays, ptr.secret) == (PK, ("wss://r.example",), SECRET)
    assert ptr.perms == perms and ptr.name == "nostr browserd"
    assert SECRET not in repr(ptr)
    legacy = f'nostrconnect://{PK}?relay=wss://r&secret=x&metadata={{"name":"App"}}'
    assert nip46.parse_nostrconnect_uri(legacy).name == "App"
    with pytest.raises(Nip46Error, match="secret"):
        nip46.parse_nostrconnect_uri(f"nostrconnect://{PK}?relay=wss://r")


def test_permissions() -> None:
    perms = nip46.parse_perms("sign_event:1,nip44_decrypt,get_public_key")
    assert perms == (
        Permission("sign_event", 1),
        Permission("nip44_decrypt"),
        Permission("get_public_key"),
    )
    assert nip46.format_perms(perms) == "sign_event:1,nip44_decrypt,get_public_key"
    assert nip46.permits(perms, "sign_event", 1)
    assert not nip46.permits(perms, "sign_event", 4)
    assert nip46.permits(nip46.parse_perms("sign_event"), "sign_event", 4)
    assert not nip46.permits(perms, "nip04_decrypt")
    assert nip46.parse_perms("") == () and nip46.parse_perms(None) == ()
    for bad in ["steal_key", "nip44_encrypt:1", "sign_event:x", "sign_event:70000"]:
        with pytest.raises(Nip46Error):
            nip46.parse_perms(bad)


def test_messages() -> None:
    req = Request("1", "connect", (PK, SECRET))
    assert SECRET not in repr(req)
    assert nip46.decode_message(req.encode()) == req
    resp = Response("1", "ack")
    assert nip46.decode_message(resp.encode()) == resp
    auth = nip46.decode_message(json.dumps({"id": "2", "result": "auth_url", "error": "https://x"}))
    assert isinstance(auth, Response) and auth.is_auth_url
    err = nip46.decode_message(json.dumps({"id": "3", "result": None, "error": "denied"}))
    assert err == Response("3", None, "denied") and not err.is_auth_url
    as_object = nip46.decode_message(json.dumps({"id": "4", "result": {"kind": 1}}))
    assert json.loads(as_object.result) == {"kind": 1}


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        "[]",
        '{"method":"ping"}',
        '{"id":"","result":"x"}',
        '{"id":"1"}',
        '{"id":"1","method":"x","params":[1]}',
        '{"id":"1","method":2,"params":[]}',
    ],
)
def test_malformed_messages(text: str) -> None:
    with pytest.raises(Nip46Error):
        nip46.decode_message(text)


@given(st.text(max_size=40), st.lists(st.text(max_size=40), max_size=4))
def test_request_round_trip(method: str, params: list[str]) -> None:
    req = Request(nip46.new_request_id(), method, tuple(params))
    assert nip46.decode_message(req.encode()) == req


def test_event_template() -> None:
    t = nip46.event_template(PK, "ciphertext")
    assert t["kind"] == nip46.KIND == 24133 and t["tags"] == [["p", PK]]
    assert t["content"] == "ciphertext" and isinstance(t["created_at"], int)


async def test_content_encryption_both_ways_and_detection() -> None:
    a, b = KeySigner.generate(), KeySigner.generate()
    for nip04 in (False, True):
        ct = await nip46.encrypt_content(a, b.pubkey, "hello", nip04=nip04)
        assert nip46.is_nip04_payload(ct) is nip04
        assert await nip46.decrypt_content(b, a.pubkey, ct) == ("hello", nip04)
