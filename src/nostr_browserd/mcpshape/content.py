"""A protocol response as MCP content: text as text, pictures as images, files as resources.

- a failure is ``isError`` with ``CODE: message`` (the message says what to do next);
- a screenshot (``{mime: image/…, base64}``) is ``image`` content, its page state as text;
- a PDF or a download is an embedded resource, or, over ``EMBED_LIMIT``, a resource link
  whose bytes ``resources/read`` serves from a small in-memory shelf.  Only an MCP server
  that serves ``resources/read`` has a shelf: the daemon's ContextVM side embeds every file
  (CEP-22 carries it in parts), and ``mcp --to`` shelves the large ones it receives
  (:func:`shelved`), so a host never gets a link it cannot read.  A file ``mcp --to`` asked
  for by Blossom link (:data:`LINK_ASK`, ``files.link``) is in the result's ``_meta``
  (:data:`LINK_META`), which ``mcp --to`` fetches and replaces by the content above;
- everything else is the same readable text a person gets on a phone (``render_text``).
"""

from __future__ import annotations

import base64
import mimetypes
import secrets
from collections import OrderedDict
from typing import Any

import mcp_types as types

from ..commands.render import render_text

EMBED_LIMIT = 1_000_000  # bytes of base64 above which a file becomes a resource link
SHELF_SIZE = 8  # files kept for resources/read; the oldest goes first
URI_PREFIX = "nostr-browserd://files/"
LINK_ASK = "nostr-browserd/files"  # in a tools/call's _meta: "link", large files by link
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

    def read(self, uri: str) -> types.BlobResourceContents | None:
        """The file a link points at, or None when it is unknown or already dropped."""
        found = self._files.get(uri)
        if found is None:
            return None
        return types.BlobResourceContents(uri=uri, mime_type=found[0], blob=found[1])

    def listing(self) -> list[types.Resource]:
        """What ``resources/list`` shows: the files still kept."""
        return [
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1], mime_type=mime)
            for uri, (mime, _) in self._files.items()
        ]


def to_result(
    response: dict[str, Any], shelf: Shelf | None, limit: int | None = None
) -> types.CallToolResult:
    """The MCP result of one protocol response (``shelf`` None: every file embedded)."""
    if not response.get("success"):
        error = response.get("error") or {}
        text = f"{error.get('code', 'INTERNAL')}: {error.get('message', 'The command failed.')}"
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    data = response.get("data")
    if not isinstance(data, dict) or ("base64" not in data and "link" not in data):
        return types.CallToolResult(content=[text_of(response, limit)])
    rest = {k: v for k, v in data.items() if k not in ("base64", "link")}
    shown = text_of({**response, "data": rest}, limit)
    mime = str(data.get("mime") or guess_mime(str(data.get("name", ""))))
    name = str(data.get("name") or default_name(mime))
    if "base64" not in data:  # a Blossom link mcp --to asked for (files.link) fetches it
        meta = {LINK_META: {**data["link"], "mime": mime, "name": name}}
        return types.CallToolResult(content=[shown], meta=meta)
    binary = binary_content(name, mime, data["base64"], shelf)
    return types.CallToolResult(content=[binary, shown])


def binary_content(name: str, mime: str, blob: str, shelf: Shelf | None) -> types.ContentBlock:
    """A picture as ``image`` content, any other file as :func:`file_content`."""
    if mime.startswith("image/"):
        return types.ImageContent(data=blob, mime_type=mime)
    return file_content(name, mime, blob, shelf)


def file_content(name: str, mime: str, blob: str, shelf: Shelf | None) -> types.ContentBlock:
    """A file embedded in the result, or a link to it on ``shelf`` when it is large."""
    if shelf is None or len(blob) <= EMBED_LIMIT:
        uri = f"{URI_PREFIX}inline/{name}"
        return types.EmbeddedResource(
            resource=types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)
        )
    size = len(base64.b64decode(blob, validate=False))
    return types.ResourceLink(uri=shelf.put(name, mime, blob), name=name, mime_type=mime, size=size)


def shelved(result: types.CallToolResult, shelf: Shelf) -> types.CallToolResult:
    """``result`` with each embedded file over ``EMBED_LIMIT`` put on ``shelf`` and linked:
    what a remote server embedded reaches the host as ``mcp --local`` would give it."""
    content = [_shelve(block, shelf) for block in result.content]
    return result.model_copy(update={"content": content})


def _shelve(block: types.ContentBlock, shelf: Shelf) -> types.ContentBlock:
    if not isinstance(block, types.EmbeddedResource):
        return block
    resource = block.resource
    if not isinstance(resource, types.BlobResourceContents) or len(resource.blob) <= EMBED_LIMIT:
        return block
    name = str(resource.uri).rsplit("/", 1)[-1]
    mime = resource.mime_type or guess_mime(name)
    return file_content(name, mime, resource.blob, shelf)


def text_of(response: dict[str, Any], limit: int | None) -> types.TextContent:
    """The readable text of a response (the answer, then the tab's address and title)."""
    rendered = render_text(response) if limit is None else render_text(response, limit)
    return types.TextContent(text=rendered)


def guess_mime(name: str) -> str:
    """A download's type from its name."""
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def default_name(mime: str) -> str:
    """``page.pdf`` for a PDF, ``file.bin`` when the type says nothing."""
    extension = mimetypes.guess_extension(mime) or ".bin"
    return ("page" if mime == "application/pdf" else "file") + extension
