"""Files in the chat, put together: what goes out with replies and what comes in for upload.

The daemon builds one ``ChatFiles`` at start and hands its two halves to the dispatcher.  It
reaches the identity logged in now (which signs Blossom uploads) and the DM link (which
sends the file messages) through getters, since both change with a login or a switch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..browser.pool import BrowserPool
from ..commands.registry import Registry
from ..dm.messages import ReplyAddress
from ..nostr.signer import Signer
from .incoming import FileReceiver
from .outgoing import FileSender, FileSettings, KeptBlobs
from .watch import ScreenWatch


class ChatSettings(FileSettings, Protocol):
    """What ``[files]`` says of both directions."""

    @property
    def max_mb(self) -> float: ...


class ChatLink(Protocol):
    """The DM link of the identity logged in now: where file messages and texts go."""

    async def send_file(self, to: ReplyAddress, url: str, tags: list[list[str]]) -> bool: ...

    async def reply(self, to: ReplyAddress, text: str, request_id: Any) -> bool: ...


class ChatFiles:
    """Files out (with text replies, deleted after ``[files] keep``) and files in."""

    def __init__(
        self,
        settings: ChatSettings,
        uploads_dir: Path,
        kept: KeptBlobs,
        browser: BrowserPool,
        registry: Registry,
        signer: Callable[[], Signer | None],
        link: Callable[[], ChatLink | None],
    ) -> None:
        """``signer()`` is the identity that signs uploads while one that signs is in;
        ``link()`` the DM link, while there is one."""
        self._link = link
        screen = ScreenWatch(registry, browser)
        self.sender = FileSender(settings, kept, signer, self._send_file, self._say, screen)
        self.receiver = FileReceiver(
            settings.max_mb, uploads_dir, browser.policy, browser.proxy_url, browser.quota
        )

    def announcements(self) -> list[dict[str, Any]]:
        """Published with the link's own: the Blossom server list (kind 10063)."""
        servers = self.sender.server_list()
        return [servers] if servers is not None else []

    async def _send_file(self, to: ReplyAddress, url: str, tags: list[list[str]]) -> bool:
        link = self._link()
        return link is not None and await link.send_file(to, url, tags)

    async def _say(self, to: ReplyAddress, text: str) -> bool:
        link = self._link()
        return link is not None and await link.reply(to, text, None)
