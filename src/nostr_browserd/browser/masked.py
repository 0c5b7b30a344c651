"""Values a reply must never show: what the credential vault filled into a page.

A password field hides itself (snapshots mask it, ``get_value`` never returns it), but the
vault also fills usernames and one-time codes into plain text fields.  ``fill_credential``
remembers each value it filled for its browser context, and the readers of field values
(``snapshot``, ``get_value``) mask any field that holds one.  The memory dies with the
context, which is where the value lives.
"""

from __future__ import annotations

import weakref

from playwright.async_api import BrowserContext

_FILLED: weakref.WeakKeyDictionary[BrowserContext, set[str]] = weakref.WeakKeyDictionary()


def remember(context: BrowserContext, value: str) -> None:
    """``value`` was filled into a page of ``context``: mask it from now on."""
    _FILLED.setdefault(context, set()).add(value)


def masked(context: BrowserContext) -> set[str]:
    """Every value filled from the vault into ``context``."""
    return _FILLED.get(context, set())
