"""The allow-list: one object that the inbox, dispatcher, link, worker and status all read.

SIGHUP replaces its entries in place, so every reader sees the new list at its next look
and nobody has to be told one by one.  A command already queued is judged by the list as it
is when it runs: a key removed meanwhile is refused then.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .config import Config, ControllerConfig


class AllowList(Mapping[str, ControllerConfig]):
    """Every allow-listed key (hex) → its entry, and the approvers they name."""

    def __init__(self, entries: Mapping[str, ControllerConfig] | None = None) -> None:
        self._entries: dict[str, ControllerConfig] = dict(entries or {})

    @classmethod
    def of(cls, config: Config) -> AllowList:
        """The list ``config`` names (``[[controllers]]`` and ``nostr.controllers``)."""
        return cls(config.allowed())

    def replace(self, entries: Mapping[str, ControllerConfig]) -> None:
        """Take the new list (a reload) for every reader at once."""
        self._entries = dict(entries)

    def __getitem__(self, pubkey: str) -> ControllerConfig:
        return self._entries[pubkey]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def approvers(self) -> set[str]:
        """Keys that may send ``approve``/``deny`` without being controllers."""
        return {c.approver for c in self._entries.values() if c.approver}

    def is_known(self, pubkey: str) -> bool:
        """A controller or an approver: whose messages are opened at all."""
        return pubkey in self._entries or pubkey in self.approvers()
