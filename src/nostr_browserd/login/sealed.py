"""What the daemon keeps encrypted to its own key: NIP-44 to itself, through its Signer.

The API keys of ``ask`` (``agent/keys.py``) and the credential vault (``vault/``) are kept
this way, so with a bunker or an n_signer a secret opens only while that signer agrees, and a
copy taken elsewhere (or kept after the identity changed) opens nowhere.  There is no
plaintext fallback: a read-only identity cannot encrypt, and :func:`seal` says so.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import BrowserdError, ErrorCode
from ..nostr.signer import Signer

NOT_LOGGED_IN = "Log in first: secrets are encrypted to the daemon's key."


class Unreadable(ValueError):
    """A sealed entry this identity cannot open: another identity's, or damaged."""


async def seal(signer: Signer | None, payload: dict[str, Any], *, instead: str) -> dict[str, str]:
    """``{"to": our pubkey, "nip44": …}`` holding ``payload``; a read-only identity is refused
    with ``instead`` appended (what the person can do rather than store it)."""
    if signer is None:
        raise BrowserdError(ErrorCode.NOT_LOGGED_IN, NOT_LOGGED_IN)
    try:
        me = await signer.public_key()
        sealed = await signer.nip44_encrypt(me, json.dumps(payload, ensure_ascii=False))
    except BrowserdError as exc:
        if exc.code == ErrorCode.READ_ONLY_IDENTITY:
            raise BrowserdError(
                ErrorCode.READ_ONLY_IDENTITY,
                "A read-only identity cannot encrypt, and secrets are never stored in "
                f"plaintext: {instead}",
            ) from None
        raise
    return {"to": me, "nip44": sealed}


async def unseal(signer: Signer, entry: dict[str, Any]) -> dict[str, Any]:
    """The payload :func:`seal` put in ``entry``.

    Raises :class:`Unreadable` when this identity cannot open it, and the signer's own
    ``BrowserdError`` (a bunker that said no, an n_signer gone) as it came.
    """
    me = await signer.public_key()
    if entry.get("to") != me:
        raise Unreadable("encrypted to another identity")
    try:
        opened = json.loads(await signer.nip44_decrypt(me, str(entry.get("nip44"))))
    except BrowserdError:
        raise
    except Exception:  # any failure to open it: not usable here
        raise Unreadable("it does not decrypt with this identity's key") from None
    if not isinstance(opened, dict):
        raise Unreadable("it holds no entry")
    return opened
