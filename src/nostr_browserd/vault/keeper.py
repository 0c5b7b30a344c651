"""The vault's keeper: entries sealed into the state store, opened for their owner only.

Every call names its owner, which the tools take from the session, never from the command:
one controller cannot reach another's entries by naming them.  The seal (``login/sealed.py``)
is NIP-44 to the daemon's own key through the Signer logged in now, so with a bunker or an
n_signer an entry opens only while that signer agrees, a read-only identity cannot hold a
vault, and after the identity changes the entries stay unreadable until added again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BrowserdError, ErrorCode
from ..login.sealed import Unreadable, seal, unseal
from ..nostr.signer import Signer
from .entry import Entry

INSTEAD = (
    "log in with a key, seed, bunker or n_signer to keep a vault (a systemd credential cannot "
    "hold one: entries are added while the daemon runs)."
)


@dataclass(frozen=True)
class VaultRow:
    """One stored entry: what it shows, and its sealed values (``{"to", "nip44"}``)."""

    name: str
    origins: list[str]
    totp: bool
    sealed: dict[str, str]


class VaultShelf(Protocol):
    """Where the rows are kept: the daemon's state store (``daemon/store/vault_rows.py``)."""

    async def vault_put(self, owner: str, row: VaultRow) -> None: ...

    async def vault_rows(self, owner: str, name: str | None = None) -> list[VaultRow]: ...

    async def vault_remove(self, owner: str, name: str) -> bool: ...


class Vault:
    """Each owner's entries in ``shelf``, sealed through whatever ``signer()`` gives now."""

    def __init__(self, shelf: VaultShelf, signer: Callable[[], Signer | None]) -> None:
        self.shelf, self.signer = shelf, signer

    async def add(self, owner: str, entry: Entry) -> dict[str, Any]:
        """Seal ``entry`` and keep it under its name, replacing one of that name."""
        sealed = await seal(self.signer(), entry.payload(owner), instead=INSTEAD)
        replaced = bool(await self.shelf.vault_rows(owner, entry.name))
        await self.shelf.vault_put(
            owner, VaultRow(entry.name, entry.origins, bool(entry.totp), sealed)
        )
        return {**entry.shown(), "replaced": replaced}

    async def entries(self, owner: str) -> list[dict[str, Any]]:
        """Names, origins, whether a TOTP is set and whether this identity can open each."""
        signer = self.signer()
        me = await signer.public_key() if signer is not None else None
        rows = await self.shelf.vault_rows(owner)
        return [
            {
                "name": r.name,
                "origins": r.origins,
                "totp": r.totp,
                "usable": r.sealed.get("to") == me,
            }
            for r in rows
        ]

    async def remove(self, owner: str, name: str) -> dict[str, Any]:
        """Forget ``owner``'s entry ``name``."""
        if not await self.shelf.vault_remove(owner, name):
            raise no_entry(name)
        return {"removed": name}

    async def open(self, owner: str, name: str) -> Entry:
        """``owner``'s entry ``name``, opened; what the seal holds is what counts."""
        rows = await self.shelf.vault_rows(owner, name)
        if not rows:
            raise no_entry(name)
        signer = self.signer()
        if signer is None:
            raise BrowserdError(ErrorCode.NOT_LOGGED_IN, "Log in first: the vault is sealed.")
        try:
            opened = await unseal(signer, rows[0].sealed)
            if opened.pop("owner", None) != owner or opened.get("name") != name:
                raise Unreadable("it was sealed for another owner or name")
            return Entry(**opened)
        except (Unreadable, TypeError):
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"The entry {name!r} cannot be opened by this identity (the daemon's identity "
                "changed, or the store was copied or edited): add it again.",
            ) from None


def no_entry(name: str) -> BrowserdError:
    return BrowserdError(
        ErrorCode.INVALID_PARAMS, f"Your vault has no entry {name!r}: see vault_list."
    )
