"""The worker as the dispatcher sees it: a protocol, so that ``dispatch`` does not import
``workers`` (which is built around a dispatcher and imports it)."""

from __future__ import annotations

from typing import Any, Protocol


class LeaseHolder(Protocol):
    """This process among several sharing the identity (``workers.Worker``)."""

    @property
    def name(self) -> str:
        """The worker's name in the store (``[state] worker``)."""
        ...

    async def renew(self, controller: str) -> bool:
        """Renew ``controller``'s lease before a command runs; False when another worker
        holds it now."""
        ...

    async def keep_state(self, controller: str, *, login: bool = True) -> None:
        """Save ``controller``'s pages, and its login state unless ``login`` is False, in the
        store, while its lease is ours."""
        ...

    async def follow(self, controller: str) -> None:
        """Before ``controller``'s first command here after it moved: reopen its pages."""
        ...

    async def initial_state(self, owner: str) -> dict[str, Any] | None:
        """What a new browser context of ``owner`` starts with: its last saved session."""
        ...
