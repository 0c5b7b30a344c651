"""What a tool reaches beyond its pages, for one owner: the network policy's verdicts, the
egress proxy, saved login states, the credential vault and Playwright's device descriptors.

They are the pool's (one each for the daemon), seen from one owner: the policy judges an
address for that owner, and the proxy is theirs only when private networks are refused to
them.  A tool gets its ``Reach`` in its context (``commands.registry.ToolContext``), so the
session keeps to its windows and tabs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .netpolicy import NetworkPolicy
from .shelf import StateShelf

if TYPE_CHECKING:
    from ..vault.entry import Keeper


class Services(Protocol):
    """What the pool keeps for every owner (``pool.BrowserPool``)."""

    policy: NetworkPolicy
    shelf: StateShelf | None
    vault: Keeper | None

    @property
    def devices(self) -> dict[str, Any]:
        """Playwright's device descriptors by name."""
        ...

    async def proxy_url(self, owner: str) -> str | None:
        """The egress proxy's URL for ``owner``'s own fetches, if the policy applies to it."""
        ...


class Reach:
    """The daemon's services as one owner may use them."""

    def __init__(self, services: Services, owner: str) -> None:
        self._services = services
        self.owner = owner

    async def refuse_url(self, url: str) -> None:
        """``FORBIDDEN`` with the reason when the network policy refuses ``url`` to the owner."""
        await self._services.policy.refuse(url, self.owner)

    async def check_url(self, url: str) -> str | None:
        """Why the network policy refuses ``url`` to the owner, or None when it allows it."""
        return await self._services.policy.check(url, self.owner)

    async def proxy_url(self) -> str | None:
        """The proxy the owner's own fetches go through, when private networks are refused."""
        return await self._services.proxy_url(self.owner)

    @property
    def shelf(self) -> StateShelf | None:
        """Where the owner's saved login states are kept (the daemon's store), if anywhere."""
        return self._services.shelf

    @property
    def vault(self) -> Keeper | None:
        """The credential vault (the daemon's store and key), if the daemon keeps one."""
        return self._services.vault

    @property
    def devices(self) -> dict[str, Any]:
        """Playwright's device descriptors by name ("iPhone 13", "Pixel 7", …)."""
        return self._services.devices
