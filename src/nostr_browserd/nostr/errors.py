"""The one root of every Nostr decoding error, so callers can drop any bad input alike.

Each NIP module raises its own subclass (``InvalidEvent``, ``Nip04Error``, ``Nip44Error``,
``Nip46Error``, ``UnwrapError``, ``Bech32Error``, ``MnemonicError``, ``RelayMessageError``);
a decoder fed outside input raises nothing else.  It stays a ``ValueError`` so that code
written against the per-NIP errors' old base keeps working.
"""

from __future__ import annotations

__all__ = ["NostrError"]


class NostrError(ValueError):
    """Input that is not the Nostr object it claims to be (malformed, forged, undecryptable)."""
