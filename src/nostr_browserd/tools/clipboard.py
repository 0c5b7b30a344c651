"""A clipboard per session: write, read, copy the selection, paste at the focus.

Chromium has one clipboard for the whole browser, shared by every context: a page allowed to
read it sees what any controller copied or pasted, and a page that writes to it can swap
what another controller is about to paste.  So the browser's clipboard is never used.  Each
session's clipboard is the daemon's own (here), and copy and paste are done in the page the
way the browser does them, with a ``copy`` or ``paste`` event the page may take over (an
editor's own handler sees the text in ``clipboardData``) and the selection or the insertion
as the default.  No page is ever given clipboard permission.
"""

from __future__ import annotations

import weakref
from typing import Any

from pydantic import Field

from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode
from .interact import act_and_compare

TOOLS = Registry()
MAX_TEXT = 100_000
CLIPS: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()

# What Control+C copies: the page's copy handler's text when it takes the event over, else a
# field's selected text (never a password field's, as in Chromium), else the page's selection.
COPY_JS = """() => {
  const focus = document.activeElement;
  const field = focus instanceof HTMLTextAreaElement
    || (focus instanceof HTMLInputElement && focus.selectionStart !== null);
  const selection = getSelection();
  const target = field ? focus : selection.anchorNode?.parentElement ?? focus ?? document.body;
  const data = new DataTransfer();
  const event = new ClipboardEvent("copy", {
    clipboardData: data, bubbles: true, cancelable: true, composed: true,
  });
  if (!target.dispatchEvent(event)) return data.getData("text/plain");
  if (focus instanceof HTMLInputElement && focus.type === "password") return "";
  return field ? focus.value.slice(focus.selectionStart, focus.selectionEnd) : String(selection);
}"""
# A paste event at the focus carrying the text; false when the page took it over.
PASTE_JS = """text => {
  const data = new DataTransfer();
  data.setData("text/plain", text);
  const event = new ClipboardEvent("paste", {
    clipboardData: data, bubbles: true, cancelable: true, composed: true,
  });
  return (document.activeElement ?? document.body).dispatchEvent(event);
}"""


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
    """Copy the page's selection onto this session's clipboard, as Control+C would."""
    text = await session.scope.evaluate(COPY_JS)
    CLIPS[session] = text
    if not text:
        return {"text": "", "note": "Nothing was copied: select something first (Control+a)."}
    return {"text": text}


@TOOLS.tool("clipboard_paste", family="clipboard", gated=True)
async def clipboard_paste(session: Session, params: NoParams) -> dict[str, Any]:
    """Paste this session's clipboard at the focus, as Control+V would."""
    text = CLIPS.get(session, "")
    if not text:
        raise BrowserdError(ErrorCode.REFUSED, "The clipboard is empty: clipboard_write first.")

    async def paste() -> None:
        if await session.scope.evaluate(PASTE_JS, text):  # the page left it to the browser
            await session.page.keyboard.insert_text(text)

    return await act_and_compare(session, paste())
