"""The vault's pure parts: origins compared exactly, TOTP against RFC 6238's vectors, entries."""

from __future__ import annotations

import base64

import pytest

from nostr_browserd.errors import BrowserdError
from nostr_browserd.vault.entry import Entry, origin_of, parse_origins, totp_code
from tests.fixtures.leaks import LEAKS

PASSWORD = "vault-unit-pass-7Hq2"
USERNAME = "vault-unit-user"
TOTP = "JBSWY3DPEHPK3PXPJBSWY3DP"
for value, what in ((PASSWORD, "a vault password"), (USERNAME, "a vault username")):
    LEAKS.secret(value, what)
LEAKS.secret(TOTP, "a vault TOTP secret")

# RFC 6238, appendix B: the seeds are ASCII "1234567890" repeated to the hash's length.
SEEDS = {"SHA1": 20, "SHA256": 32, "SHA512": 64}
VECTORS = [
    (59, {"SHA1": "94287082", "SHA256": "46119246", "SHA512": "90693936"}),
    (1111111109, {"SHA1": "07081804", "SHA256": "68084774", "SHA512": "25091201"}),
    (1111111111, {"SHA1": "14050471", "SHA256": "67062674", "SHA512": "99943326"}),
    (1234567890, {"SHA1": "89005924", "SHA256": "91819424", "SHA512": "93441116"}),
    (2000000000, {"SHA1": "69279037", "SHA256": "90698825", "SHA512": "38618901"}),
    (20000000000, {"SHA1": "65353130", "SHA256": "77737706", "SHA512": "47863826"}),
]


def rfc_uri(algorithm: str) -> str:
    seed = (b"1234567890" * 7)[: SEEDS[algorithm]]
    secret = base64.b32encode(seed).decode().rstrip("=")
    return f"otpauth://totp/rfc6238?secret={secret}&digits=8&period=30&algorithm={algorithm}"


@pytest.mark.parametrize("at,codes", VECTORS)
def test_totp_codes_are_rfc_6238s_test_vectors(at, codes):
    for algorithm, code in codes.items():
        assert totp_code(rfc_uri(algorithm), at) == code, algorithm
    # A bare base32 secret is SHA-1, 6 digits, 30 s: the vector's last six digits.
    sha1 = rfc_uri("SHA1").split("secret=")[1].split("&")[0]
    assert totp_code(sha1.lower(), at) == codes["SHA1"][-6:]


def test_origins_are_scheme_host_and_port_exactly():
    assert origin_of("https://GitHub.com:443/login?next=/") == "https://github.com"
    assert origin_of("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080"
    assert origin_of("https://github.com:8443/") == "https://github.com:8443"
    for none in ("about:blank", "data:text/html,x", "file:///etc/passwd", "github.com", ""):
        assert origin_of(none) is None, none
    assert parse_origins("https://a.example/x, https://b.example") == [
        "https://a.example",
        "https://b.example",
    ]
    with pytest.raises(BrowserdError, match="is not an origin"):
        parse_origins(["ftp://a.example"])


def test_a_bad_entry_is_refused_without_repeating_a_value():
    for bad in ({"totp": "not base32 at all!"}, {"totp": "otpauth://hotp/x?secret=JBSWY3DP"}):
        with pytest.raises(BrowserdError) as caught:
            Entry.checked("site", "https://a.example", USERNAME, PASSWORD, **bad)
        assert bad["totp"] not in caught.value.message and "TOTP" in caught.value.message
    with pytest.raises(BrowserdError, match="password is one line"):
        Entry.checked("site", "https://a.example", USERNAME, "")
    with pytest.raises(BrowserdError, match="name"):
        Entry.checked("../x", "https://a.example", USERNAME, PASSWORD)
    assert PASSWORD not in repr(Entry.checked("site", "https://a.example", USERNAME, PASSWORD))
