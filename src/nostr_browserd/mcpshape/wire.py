"""MCP's tool listing and results as the JSON that goes on the wire, without the MCP SDK.

The SDK's wire types take a quarter of a second of CPU to import.  ``mcp --local`` on a pipe
(:mod:`..mcp.plain`) writes these dicts as they are; the SDK's servers validate the same
dicts into its types (:mod:`.content`, :mod:`.listing`), so both say the same thing.

- a failure is ``isError`` with ``CODE: message`` (the message says what to do next);
- a screenshot (``{mime: image/…, base64}``) is ``image`` content, its page state as text;
- a PDF or a download is an embedded resource, or, over ``EMBED_LIMIT``, a resource link
  whose bytes ``resources/read`` serves from a small in-memory shelf;
- everything else is the same readable text a person gets on a phone (``render_text``).
"""

from __future__ import annotations

import base64
import mimetypes
import secrets
from collections import OrderedDict
from typing import Any

from ..commands.registry import Tool
from ..commands.render import render_text

Wire = dict[str, Any]
EMBED_LIMIT = 1_000_000  # bytes of base64 above which a file becomes a resource link
SHELF_SIZE = 8  # files kept for resources/read; the oldest goes first
URI_PREFIX = "nostr-browserd://files/"
LINK_META = "nostr-browserd/file"  # in a result's _meta: its file as that Blossom link


class Shelf:
    """The last few large files, for ``resources/read`` of the links handed out."""

    def __init__(self, size: int = SHELF_SIZE) -> None:
        self.size = size
        self._files: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def put(self, name: str, mime: str, blob: str) -> str:
        """Keep ``blob`` (base64) and return the URI it is read by."""
        uri = f"{URI_PREFIX}{secrets.token_hex(6)}/{name}"
        self._files[uri] = (mime, blob)
        while len(self._files) > self.size:
            self._files.popitem(last=False)
        return uri

    def contents(self, uri: str) -> Wire | None:
        """The file a link points at (``BlobResourceContents``), or None when it is unknown
        or already dropped."""
        found = self._files.get(uri)
        if found is None:
            return None
        return {"uri": uri, "mimeType": found[0], "blob": found[1]}

    def resources(self) -> list[Wire]:
        """What ``resources/list`` shows: the files still kept."""
        return [
            {"name": uri.rsplit("/", 1)[-1], "uri": uri, "mimeType": mime}
            for uri, (mime, _) in self._files.items()
        ]


def tool_entry(tool: Tool[Any]) -> Wire:
    """One registry tool as ``tools/list`` lists it: its params' JSON Schema is the input
    schema, its annotations are read off its policy fields (``Tool.annotations``)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.params.model_json_schema(),
        "annotations": tool.annotations(),
    }


def result(response: dict[str, Any], shelf: Shelf | None, limit: int | None = None) -> Wire:
    """The ``CallToolResult`` of one protocol response (``shelf`` None: every file embedded)."""
    if not response.get("success"):
        error = response.get("error") or {}
        text = f"{error.get('code', 'INTERNAL')}: {error.get('message', 'The command failed.')}"
        return {"content": [text_block(text)], "isError": True}
    data = response.get("data")
    if not isinstance(data, dict) or ("base64" not in data and "link" not in data):
        return {"content": [text_of(response, limit)], "isError": False}
    rest = {k: v for k, v in data.items() if k not in ("base64", "link")}
    shown = text_of({**response, "data": rest}, limit)
    mime = str(data.get("mime") or guess_mime(str(data.get("name", ""))))
    name = str(data.get("name") or default_name(mime))
    if "base64" not in data:  # a Blossom link mcp --to asked for (files.link) fetches it
        meta = {LINK_META: {**data["link"], "mime": mime, "name": name}}
        return {"_meta": meta, "content": [shown], "isError": False}
    binary = binary_block(name, mime, data["base64"], shelf)
    return {"content": [binary, shown], "isError": False}


def binary_block(name: str, mime: str, blob: str, shelf: Shelf | None) -> Wire:
    """A picture as ``image`` content, any other file as :func:`file_block`."""
    if mime.startswith("image/"):
        return {"type": "image", "data": blob, "mimeType": mime}
    return file_block(name, mime, blob, shelf)


def file_block(name: str, mime: str, blob: str, shelf: Shelf | None) -> Wire:
    """A file embedded in the result, or a link to it on ``shelf`` when it is large."""
    if shelf is None or len(blob) <= EMBED_LIMIT:
        uri = f"{URI_PREFIX}inline/{name}"
        return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": blob}}
    size = len(base64.b64decode(blob, validate=False))
    uri = shelf.put(name, mime, blob)
    return {"type": "resource_link", "name": name, "uri": uri, "mimeType": mime, "size": size}


def text_block(text: str) -> Wire:
    return {"type": "text", "text": text}


def text_of(response: dict[str, Any], limit: int | None) -> Wire:
    """The readable text of a response (the answer, then the tab's address and title)."""
    return text_block(render_text(response) if limit is None else render_text(response, limit))


def guess_mime(name: str) -> str:
    """A download's type from its name."""
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def default_name(mime: str) -> str:
    """``page.pdf`` for a PDF, ``file.bin`` when the type says nothing."""
    extension = mimetypes.guess_extension(mime) or ".bin"
    return ("page" if mime == "application/pdf" else "file") + extension
