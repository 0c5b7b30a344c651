"""Saved browser states and ``ask`` conversations: kept only sealed to the daemon's key.

A saved state holds a controller's logins (cookies, HttpOnly session tokens, local storage) and
a conversation holds page text the model read, so neither is ever written in plaintext: each
row's data is an envelope (``login/envelope.py``) bound to its owner and name, sealed through
the Signer logged in now.  Without an identity that can encrypt nothing is saved, and the
caller is told why.  Rows an older release wrote in plaintext are still read, and
:meth:`SealedRows.seal_plaintext` (run by the daemon once its identity is in) seals them.
"""

from __future__ import annotations

import json
import logging
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from ...errors import BrowserdError, ErrorCode
from ...login.envelope import Envelopes, is_sealed
from ...login.sealed import Unreadable

log = logging.getLogger(__name__)

STATE, CONVERSATION = "state", "conversation"  # what a row is, inside its seal
SEALED = '{"to":%'  # how every sealed row's text begins (json.dumps of an envelope)
INSTEAD = (
    "log in with a key, seed, bunker or n_signer to keep saved logins and conversations"
    " (mcp --local has no identity: use the daemon for them)."
)


class SealedRows:
    """The statements on ``saved_state`` and ``conversation`` (mixed into ``Store``)."""

    envelopes: Envelopes

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def conversation(self, controller: str) -> list[dict[str, Any]]:
        """``controller``'s ``ask`` conversation (empty when none, or unreadable)."""
        rows = await self._rows(
            "SELECT transcript FROM conversation WHERE controller = ?", (controller,)
        )
        transcript = _json(rows[0][0]) if rows else None
        if is_sealed(transcript):
            try:
                transcript = await self.envelopes.open(CONVERSATION, controller, "", transcript)
            except Unreadable as exc:
                log.warning("the ask conversation of %s is not readable: %s", controller[:12], exc)
                return []
        return transcript if isinstance(transcript, list) else []

    async def save_conversation(self, controller: str, transcript: list[dict[str, Any]]) -> None:
        """Keep ``controller``'s conversation across turns and restarts, sealed."""
        sealed = await self.envelopes.seal(
            CONVERSATION, controller, "", transcript, instead=INSTEAD
        )
        await self._change(
            "INSERT INTO conversation (controller, transcript, at) VALUES (?, ?, ?)"
            " ON CONFLICT (controller) DO UPDATE SET transcript = excluded.transcript,"
            " at = excluded.at",
            (controller, json.dumps(sealed), time.time()),
        )

    async def forget_conversation(self, controller: str) -> None:
        """``ask --new``: the next turn starts with nothing behind it."""
        await self._change("DELETE FROM conversation WHERE controller = ?", (controller,))

    async def save_state(self, owner: str, name: str, state: dict[str, Any]) -> None:
        """Keep a saved browser state (``state_save``, or the daemon's own under a reserved
        name), sealed, replacing the one of that name."""
        sealed = await self.envelopes.seal(STATE, owner, name, state, instead=INSTEAD)
        await self._change(
            "INSERT INTO saved_state (owner, name, state, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (owner, name) DO UPDATE SET state = excluded.state, at = excluded.at",
            (owner, name, json.dumps(sealed), time.time()),
        )

    async def load_state(self, owner: str, name: str) -> dict[str, Any] | None:
        """``owner``'s saved state ``name``; None when there is none, or it is not JSON.

        One this identity cannot open (another identity's, or a row copied or edited) is
        ``REFUSED``, saying so.
        """
        rows = await self._rows(
            "SELECT state FROM saved_state WHERE owner = ? AND name = ?", (owner, name)
        )
        state = _json(rows[0][0]) if rows else None
        if is_sealed(state):
            try:
                state = await self.envelopes.open(STATE, owner, name, state)
            except Unreadable:
                raise BrowserdError(
                    ErrorCode.REFUSED,
                    f"The saved state {name!r} cannot be opened by this identity (the daemon's"
                    " identity changed, or the store was copied or edited): save it again.",
                ) from None
        return state if isinstance(state, dict) else None

    async def state_names(self, owner: str) -> list[str]:
        """The names of ``owner``'s saved states, reserved ones included."""
        rows = await self._rows("SELECT name FROM saved_state WHERE owner = ?", (owner,))
        return sorted(row[0] for row in rows)

    async def seal_plaintext(self) -> int:
        """Seal the states and conversations an older release kept in plaintext; how many.

        Each row is replaced only while it is still the plaintext read (``AND state = ?``):
        another worker's newer save, made meanwhile, is never overwritten.
        """
        sealed = 0
        for owner, name, text in await self._rows(
            "SELECT owner, name, state FROM saved_state WHERE state NOT LIKE ?", (SEALED,)
        ):
            state = _json(text)
            if isinstance(state, dict) and not is_sealed(state):
                envelope = await self.envelopes.seal(STATE, owner, name, state, instead=INSTEAD)
                sealed += await self._change(
                    "UPDATE saved_state SET state = ? WHERE owner = ? AND name = ? AND state = ?",
                    (json.dumps(envelope), owner, name, text),
                )
        for controller, text in await self._rows(
            "SELECT controller, transcript FROM conversation WHERE transcript NOT LIKE ?",
            (SEALED,),
        ):
            transcript = _json(text)
            if isinstance(transcript, list):
                envelope = await self.envelopes.seal(
                    CONVERSATION, controller, "", transcript, instead=INSTEAD
                )
                sealed += await self._change(
                    "UPDATE conversation SET transcript = ?"
                    " WHERE controller = ? AND transcript = ?",
                    (json.dumps(envelope), controller, text),
                )
        return sealed


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
