"""The daemon's ContextVM server for one identity: built beside its DM link, on its relays.

What the server needs of the service is named here once: the dispatcher (its allow-list
and its ``submit``), the tools a key's role lists (``help``'s catalog, so the agent sees
what it may run and no more), and the ``[contextvm]`` and ``[nostr]`` words for what
``initialize`` and an announcement say.
"""

from __future__ import annotations

from collections.abc import Collection

from ..commands.registry import Registry
from ..contextvm.server import ContextVmServer, Publish, ServerInfo
from ..nostr.signer import Signer
from .admission import role_catalog
from .config import Config, ControllerConfig
from .dispatch import Dispatcher


def contextvm_server(
    config: Config, signer: Signer, dispatcher: Dispatcher, registry: Registry, publish: Publish
) -> ContextVmServer | None:
    """The server, or None when ``[contextvm] enabled = false``."""
    if not config.contextvm.enabled:
        return None

    def listing(pubkey: str) -> Collection[str]:
        controller = dispatcher.controllers.get(pubkey)  # read at each call: SIGHUP-safe
        return [] if controller is None else tool_names(registry, controller)

    info = ServerInfo(
        name=config.nostr.name,
        about=config.nostr.about,
        picture=config.contextvm.picture,
        website=config.contextvm.website,
    )
    return ContextVmServer(
        signer,
        dispatcher=dispatcher,
        registry=registry,
        listing=listing,
        publish=publish,
        info=info,
    )


def tool_names(registry: Registry, controller: ControllerConfig) -> list[str]:
    """What ``help`` lists for ``controller``: the names its role may run."""
    return [t["name"] for t in role_catalog(registry, controller)["tools"]]
