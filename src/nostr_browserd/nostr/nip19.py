"""NIP-19 bech32 entities: npub, nsec, note, nprofile, nevent (and naddr on decode).

Decoders are strict: the caller says which prefix it expects and anything else is a
:class:`Bech32Error`. Error messages never repeat the input, which may be a secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from .errors import NostrError
from .keys import is_valid_secret

__all__ = [
    "Bech32Error",
    "decode",
    "decode_naddr",
    "decode_nevent",
    "decode_note",
    "decode_nprofile",
    "decode_npub",
    "decode_nsec",
    "naddr_encode",
    "nevent_encode",
    "note_encode",
    "nprofile_encode",
    "npub_encode",
    "nsec_encode",
    "parse_pubkey",
    "parse_secret",
]


class Bech32Error(NostrError):
    """A string that is not the NIP-19 entity the caller expected."""


# -- bech32 (BIP-173) -----------------------------------------------------------------

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_CHARMAP = {c: i for i, c in enumerate(_CHARSET)}
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
# NIP-19 lifts BIP-173's 90-character limit for TLV entities; keep a generous bound.
MAX_LENGTH = 5000


def _polymod(values: Iterable[int]) -> int:
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= _GEN[i]
    return chk


def _hrp_expand(hrp: str) -> list[int]:
    return [ord(x) >> 5 for x in hrp] + [0] + [ord(x) & 31 for x in hrp]


def _convertbits(data: Iterable[int], frombits: int, tobits: int, pad: bool) -> list[int]:
    acc = 0
    bits = 0
    out: list[int] = []
    maxv = (1 << tobits) - 1
    for value in data:
        acc = (acc << frombits) | value
        bits += frombits
        while bits >= tobits:
            bits -= tobits
            out.append((acc >> bits) & maxv)
    if pad:
        if bits:
            out.append((acc << (tobits - bits)) & maxv)
    elif bits >= frombits or ((acc << (tobits - bits)) & maxv):
        raise Bech32Error("invalid bech32 padding")
    return out


def bech32_encode(hrp: str, data: bytes) -> str:
    """Encode ``data`` bytes under human-readable part ``hrp`` (bech32, not bech32m)."""
    values = _convertbits(data, 8, 5, True)
    polymod = _polymod([*_hrp_expand(hrp), *values, 0, 0, 0, 0, 0, 0]) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_CHARSET[d] for d in values + checksum)


def bech32_decode(s: str) -> tuple[str, bytes]:
    """Decode a bech32 string into ``(hrp, data bytes)``; :class:`Bech32Error` if invalid."""
    if not isinstance(s, str):
        raise Bech32Error("expected a bech32 string")
    if len(s) > MAX_LENGTH:
        raise Bech32Error("bech32 string is too long")
    if any(ord(c) < 33 or ord(c) > 126 for c in s):
        raise Bech32Error("bech32 string has characters outside printable ASCII")
    if s.lower() != s and s.upper() != s:
        raise Bech32Error("bech32 string mixes upper and lower case")
    s = s.lower()
    pos = s.rfind("1")
    if pos < 1 or pos + 7 > len(s):
        raise Bech32Error("bech32 string has no valid separator or is too short")
    hrp = s[:pos]
    try:
        values = [_CHARMAP[c] for c in s[pos + 1 :]]
    except KeyError:
        raise Bech32Error("bech32 string has an invalid character") from None
    if _polymod([*_hrp_expand(hrp), *values]) != 1:
        raise Bech32Error("bech32 checksum is wrong (a typo?)")
    return hrp, bytes(_convertbits(values[:-6], 5, 8, False))


# -- TLV ------------------------------------------------------------------------------

TLV_SPECIAL = 0
TLV_RELAY = 1
TLV_AUTHOR = 2
TLV_KIND = 3


def _tlv_encode(items: Sequence[tuple[int, bytes]]) -> bytes:
    out = bytearray()
    for t, v in items:
        if len(v) > 255:
            raise Bech32Error("a TLV value is longer than 255 bytes")
        out += bytes((t, len(v))) + v
    return bytes(out)


def _tlv_decode(data: bytes) -> dict[int, list[bytes]]:
    result: dict[int, list[bytes]] = {}
    i = 0
    while i < len(data):
        if i + 2 > len(data):
            raise Bech32Error("truncated TLV record")
        t, n = data[i], data[i + 1]
        if i + 2 + n > len(data):
            raise Bech32Error("truncated TLV value")
        result.setdefault(t, []).append(data[i + 2 : i + 2 + n])
        i += 2 + n
    return result


def _hex32(value: str, what: str) -> bytes:
    if not isinstance(value, str) or len(value) != 64:
        raise Bech32Error(f"{what} must be 64 hex characters")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise Bech32Error(f"{what} must be 64 hex characters") from None


def _relay_bytes(relays: Iterable[str]) -> list[tuple[int, bytes]]:
    return [(TLV_RELAY, r.encode("utf-8")) for r in relays]


def _relays_of(tlv: dict[int, list[bytes]]) -> list[str]:
    try:
        return [r.decode("utf-8") for r in tlv.get(TLV_RELAY, [])]
    except UnicodeDecodeError:
        raise Bech32Error("a relay URL in the TLV is not valid UTF-8") from None


def _special32(tlv: dict[int, list[bytes]], what: str) -> str:
    special = tlv.get(TLV_SPECIAL)
    if not special or len(special[0]) != 32:
        raise Bech32Error(f"{what} must carry a 32-byte special value")
    return special[0].hex()


def _author(tlv: dict[int, list[bytes]]) -> str | None:
    author = tlv.get(TLV_AUTHOR)
    if not author:
        return None
    if len(author[0]) != 32:
        raise Bech32Error("author TLV must be 32 bytes")
    return author[0].hex()


def _kind(tlv: dict[int, list[bytes]]) -> int | None:
    kind = tlv.get(TLV_KIND)
    if not kind:
        return None
    if len(kind[0]) != 4:
        raise Bech32Error("kind TLV must be 4 bytes")
    return int.from_bytes(kind[0], "big")


# -- encoders -------------------------------------------------------------------------


def npub_encode(pubkey_hex: str) -> str:
    """``npub1…`` for a 64-hex public key."""
    return bech32_encode("npub", _hex32(pubkey_hex, "public key"))


def nsec_encode(seckey: bytes) -> str:
    """``nsec1…`` for a 32-byte secret key."""
    if not isinstance(seckey, bytes | bytearray) or len(seckey) != 32:
        raise Bech32Error("secret key must be 32 bytes")
    return bech32_encode("nsec", bytes(seckey))


def note_encode(id_hex: str) -> str:
    """``note1…`` for a 64-hex event id."""
    return bech32_encode("note", _hex32(id_hex, "event id"))


def nprofile_encode(pubkey_hex: str, relays: Iterable[str] = ()) -> str:
    """``nprofile1…``: a public key with relay hints."""
    items = [(TLV_SPECIAL, _hex32(pubkey_hex, "public key")), *_relay_bytes(relays)]
    return bech32_encode("nprofile", _tlv_encode(items))


def nevent_encode(
    id_hex: str, relays: Iterable[str] = (), author: str | None = None, kind: int | None = None
) -> str:
    """``nevent1…``: an event id with optional relay hints, author and kind."""
    items = [(TLV_SPECIAL, _hex32(id_hex, "event id")), *_relay_bytes(relays)]
    if author is not None:
        items.append((TLV_AUTHOR, _hex32(author, "author")))
    if kind is not None:
        if not isinstance(kind, int) or not 0 <= kind < 2**32:
            raise Bech32Error("kind must be an unsigned 32-bit integer")
        items.append((TLV_KIND, kind.to_bytes(4, "big")))
    return bech32_encode("nevent", _tlv_encode(items))


def naddr_encode(identifier: str, pubkey_hex: str, kind: int, relays: Iterable[str] = ()) -> str:
    """``naddr1…``: an addressable event coordinate ``kind:pubkey:d``."""
    if not isinstance(kind, int) or not 0 <= kind < 2**32:
        raise Bech32Error("kind must be an unsigned 32-bit integer")
    items = [
        (TLV_SPECIAL, identifier.encode("utf-8")),
        *_relay_bytes(relays),
        (TLV_AUTHOR, _hex32(pubkey_hex, "author")),
        (TLV_KIND, kind.to_bytes(4, "big")),
    ]
    return bech32_encode("naddr", _tlv_encode(items))


# -- decoders -------------------------------------------------------------------------


def decode(s: str) -> tuple[str, Any]:
    """Decode any NIP-19 entity into ``(prefix, value)``.

    npub/note → hex str; nsec → bytes; nprofile → ``{"pubkey", "relays"}``;
    nevent → ``{"id", "relays", "author", "kind"}``;
    naddr → ``{"identifier", "pubkey", "kind", "relays"}``.
    """
    if isinstance(s, str) and s.lower().startswith("nostr:"):
        s = s[6:]
    hrp, data = bech32_decode(s)
    if hrp in ("npub", "note"):
        if len(data) != 32:
            raise Bech32Error(f"{hrp} must encode 32 bytes")
        return hrp, data.hex()
    if hrp == "nsec":
        if not is_valid_secret(data):
            raise Bech32Error("nsec does not encode a valid secret key")
        return hrp, data
    if hrp == "nprofile":
        tlv = _tlv_decode(data)
        return hrp, {"pubkey": _special32(tlv, "nprofile"), "relays": _relays_of(tlv)}
    if hrp == "nevent":
        tlv = _tlv_decode(data)
        return hrp, {
            "id": _special32(tlv, "nevent"),
            "relays": _relays_of(tlv),
            "author": _author(tlv),
            "kind": _kind(tlv),
        }
    if hrp == "naddr":
        tlv = _tlv_decode(data)
        special = tlv.get(TLV_SPECIAL)
        author = _author(tlv)
        kind = _kind(tlv)
        if special is None or author is None or kind is None:
            raise Bech32Error("naddr needs an identifier, an author and a kind")
        try:
            identifier = special[0].decode("utf-8")
        except UnicodeDecodeError:
            raise Bech32Error("naddr identifier is not valid UTF-8") from None
        return hrp, {
            "identifier": identifier,
            "pubkey": author,
            "kind": kind,
            "relays": _relays_of(tlv),
        }
    raise Bech32Error("unknown NIP-19 prefix")


def _expect(s: str, prefix: str) -> Any:
    """Decode ``s`` and insist it is a ``prefix`` entity."""
    if not isinstance(s, str):
        raise Bech32Error(f"expected an {prefix} string")
    s = s.strip()
    if s.lower().startswith("nostr:"):
        s = s[6:]
    actual = s[: s.rfind("1")].lower() if "1" in s else ""
    if actual != prefix:
        if actual == "nsec":
            # Never echo a secret back, not even in an error message.
            raise Bech32Error(f"expected an {prefix}, got a secret key (nsec): keep it private")
        raise Bech32Error(f"expected an {prefix}1… string")
    hrp, value = decode(s)
    assert hrp == prefix
    return value


def decode_npub(s: str) -> str:
    """The hex public key of an ``npub1…``."""
    return cast(str, _expect(s, "npub"))


def decode_nsec(s: str) -> bytes:
    """The 32-byte secret of an ``nsec1…``."""
    return cast(bytes, _expect(s, "nsec"))


def decode_note(s: str) -> str:
    """The hex event id of a ``note1…``."""
    return cast(str, _expect(s, "note"))


def decode_nprofile(s: str) -> tuple[str, list[str]]:
    """``(pubkey_hex, relays)`` of an ``nprofile1…``."""
    value = _expect(s, "nprofile")
    return value["pubkey"], value["relays"]


def decode_nevent(s: str) -> dict[str, Any]:
    """``{"id", "relays", "author", "kind"}`` of an ``nevent1…``."""
    return cast(dict[str, Any], _expect(s, "nevent"))


def decode_naddr(s: str) -> dict[str, Any]:
    """``{"identifier", "pubkey", "kind", "relays"}`` of an ``naddr1…``."""
    return cast(dict[str, Any], _expect(s, "naddr"))


_HEXCHARS = frozenset("0123456789abcdefABCDEF")


def parse_pubkey(s: str) -> str:
    """A public key given as ``npub1…``, ``nprofile1…`` or 64 hex → lowercase hex.

    The key must be a point on the curve. An ``nsec`` is refused without being echoed.
    """
    from .keys import is_valid_pubkey

    if not isinstance(s, str):
        raise Bech32Error("expected a public key (npub1… or 64 hex characters)")
    s = s.strip()
    if s.lower().startswith("nostr:"):
        s = s[6:]
    low = s.lower()
    if len(s) == 64 and set(s) <= _HEXCHARS:
        pubkey = low
    elif low.startswith("npub1"):
        pubkey = decode_npub(s)
    elif low.startswith("nprofile1"):
        pubkey = decode_nprofile(s)[0]
    elif low.startswith("nsec1"):
        raise Bech32Error("expected a public key (npub), got a secret key (nsec): keep it private")
    else:
        raise Bech32Error("expected a public key (npub1… or 64 hex characters)")
    if not is_valid_pubkey(pubkey):
        raise Bech32Error("public key is not a point on secp256k1")
    return pubkey


def parse_secret(s: str) -> bytes:
    """A secret key given as ``nsec1…`` or 64 hex → 32 bytes (never echoed in errors)."""
    if not isinstance(s, str):
        raise Bech32Error("expected a secret key (nsec1… or 64 hex characters)")
    s = s.strip()
    if s.lower().startswith("nsec1"):
        return decode_nsec(s)
    if len(s) == 64 and set(s) <= _HEXCHARS:
        secret = bytes.fromhex(s)
        if not is_valid_secret(secret):
            raise Bech32Error("secret key is out of range for secp256k1")
        return secret
    if s.lower().startswith("npub1"):
        raise Bech32Error("expected a secret key (nsec), got a public key (npub)")
    raise Bech32Error("expected a secret key (nsec1… or 64 hex characters)")
