"""A clipboard per session: write, read, copy the selection, paste at the focus.

Chromium has one clipboard for the whole browser, shared by every context, so one
controller could read what another copied.  Each session therefore keeps its own
clipboard here; the browser's is used only for the moment of a copy or paste (under a
lock, with permission granted to the page's origin) and is emptied straight after.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from playwright.async_api import Page
from pydantic import Field

from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode
from .interact import act_and_compare

TOOLS = Registry()
MAX_TEXT = 100_000
CLIPS: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()
SYSTEM = asyncio.Lock()  # the browser's one clipboard, used by one session at a time
WRITE_JS = "text => navigator.clipboard.writeText(text)"
READ_JS = "() => navigator.clipboard.readText()"


@asynccontextmanager
async def system_clipboard(session: Session) -> AsyncIterator[Page]:
    """The active page with clipboard access, the browser's clipboard empty before and after."""
    page = session.page
    origin = await page.evaluate("location.origin")
    if not origin.startswith(("http://", "https://")):
        raise BrowserdError(ErrorCode.REFUSED, "The clipboard needs an http(s) page: open one.")
    async with SYSTEM:
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
        await page.evaluate(WRITE_JS, "")
        try:
            yield page
        finally:
            await page.evaluate(WRITE_JS, "")


class ClipText(Params):
    """The text to put on the clipboard."""

    text: str = Field(max_length=MAX_TEXT)


@TOOLS.tool("clipboard_write", family="clipboard", gated=True, params=ClipText, args=("*text",))
async def clipboard_write(session: Session, params: ClipText) -> dict[str, Any]:
    """Put text on this session's clipboard (clipboard_paste puts it into the page)."""
    CLIPS[session] = params.text
    return {"characters": len(params.text)}


@TOOLS.tool("clipboard_read", family="clipboard", gated=False, reads_secrets=True)
async def clipboard_read(session: Session, params: NoParams) -> dict[str, Any]:
    """What this session's clipboard holds (from clipboard_write or clipboard_copy)."""
    return {"text": CLIPS.get(session, "")}


@TOOLS.tool("clipboard_copy", family="clipboard", gated=True)
async def clipboard_copy(session: Session, params: NoParams) -> dict[str, Any]:
    """Copy the page's selection (Control+C) onto this session's clipboard."""
    async with system_clipboard(session) as page:
        await page.keyboard.press("ControlOrMeta+c")
        text = await page.evaluate(READ_JS)
    CLIPS[session] = text
    if not text:
        return {"text": "", "note": "Nothing was copied: select something first (Control+a)."}
    return {"text": text}


@TOOLS.tool("clipboard_paste", family="clipboard", gated=True)
async def clipboard_paste(session: Session, params: NoParams) -> dict[str, Any]:
    """Paste this session's clipboard at the focus (Control+V), as a person would."""
    text = CLIPS.get(session, "")
    if not text:
        raise BrowserdError(ErrorCode.REFUSED, "The clipboard is empty: clipboard_write first.")
    async with system_clipboard(session) as page:
        await page.evaluate(WRITE_JS, text)
        return await act_and_compare(session, page.keyboard.press("ControlOrMeta+v"))
