"""One tab of a session: its page, its window, and what the session remembers of it.

Everything kept per tab lives here, so closing a tab forgets all of it at once: the cached
title (the page reports changes, navigation clears it), and the last snapshot and screenshot
that the diffs and the annotated screenshot compare against, and the numbers of the last
annotated screenshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playwright.async_api import BrowserContext, Page

from .labels import Labels


@dataclass(eq=False)
class Snapshot:
    """A tab's latest snapshot: the params it was taken with, and its text."""

    params: dict[str, Any]
    text: str


@dataclass(eq=False)
class Tab:
    """A page with a stable id (``t3``, never reused) in a window (``w1``) of a session."""

    id: str
    page: Page
    window: str
    title: str | None = None  # None: not known since the document last changed
    snapshot: Snapshot | None = None
    screenshot: bytes | None = None
    labels: Labels | None = None  # of the last annotated screenshot (click 3)

    @property
    def context(self) -> BrowserContext:
        """The BrowserContext of the tab's window (its cookies and storage)."""
        return self.page.context
