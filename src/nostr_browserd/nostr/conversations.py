"""The NIP-44 conversation keys of one secret key, kept for the peers that come back.

A conversation key costs an ECDH and an HKDF.  The daemon needs the one it shares with a
controller twice per command (the seal it opens, the seal of its reply) and again for every
command of that controller, so it is computed once and kept.  A gift wrap's one-time key,
though, is met once and never again: kept like the others, a flood of them would push the
controllers' keys out.  So the cache has two bounded parts (a segmented LRU): a peer met once
waits in probation, and only a peer met again moves on to the kept part, which one-time keys
therefore never reach.

The cache belongs to one key (its :class:`~.signer.KeySigner`): a key computed for one
identity can never answer for another, and :meth:`ConversationKeys.clear` forgets them all when
that identity logs out or is switched away.
"""

from __future__ import annotations

from collections import OrderedDict

from . import nip44

__all__ = ["ConversationKeys"]


class ConversationKeys:
    """``get(pubkey)`` is ``nip44.conversation_key(seckey, pubkey)``, computed once per peer."""

    __slots__ = ("_kept", "_kept_size", "_probation", "_probation_size", "_seckey")

    def __init__(self, seckey: bytes, *, kept: int = 1024, probation: int = 64) -> None:
        self._seckey = seckey
        self._kept: OrderedDict[str, bytes] = OrderedDict()
        self._probation: OrderedDict[str, bytes] = OrderedDict()
        self._kept_size, self._probation_size = kept, probation

    def get(self, pubkey: str) -> bytes:
        """The conversation key with ``pubkey``; :class:`~.nip44.Nip44Error` if it is no key."""
        if (key := self._kept.get(pubkey)) is not None:
            self._kept.move_to_end(pubkey)
            return key
        if (key := self._probation.pop(pubkey, None)) is not None:
            self._kept[pubkey] = key  # met again: a peer, not a one-time key
            if len(self._kept) > self._kept_size:
                self._kept.popitem(last=False)
            return key
        key = nip44.conversation_key(self._seckey, pubkey)
        self._probation[pubkey] = key
        if len(self._probation) > self._probation_size:
            self._probation.popitem(last=False)
        return key

    def __contains__(self, pubkey: object) -> bool:
        return pubkey in self._kept or pubkey in self._probation

    def __len__(self) -> int:
        return len(self._kept) + len(self._probation)

    def clear(self) -> None:
        """Forget every key (logout, a switch of identity)."""
        self._kept.clear()
        self._probation.clear()
