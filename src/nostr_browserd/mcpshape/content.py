"""A protocol response as the MCP SDK's content types, for the servers built on the SDK.

What the content is (text, image, embedded file or link) is :mod:`.wire`'s; here its dicts
become the SDK's types.  Only an MCP server that serves ``resources/read`` has a shelf: the
daemon's ContextVM side embeds every file (CEP-22 carries it in parts), and ``mcp --to``
shelves the large ones it receives (:func:`shelved`), so a host never gets a link it cannot
read.  A file ``mcp --to`` asked for by Blossom link (:data:`LINK_ASK`, ``files.link``) is in
the result's ``_meta`` (:data:`LINK_META`), which ``mcp --to`` fetches and replaces by the
content above.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import TypeAdapter

from . import wire
from .wire import EMBED_LIMIT, LINK_META, default_name, guess_mime

__all__ = [
    "EMBED_LIMIT",
    "LINK_ASK",
    "LINK_META",
    "Shelf",
    "binary_content",
    "default_name",
    "shelved",
    "to_result",
]

LINK_ASK = "nostr-browserd/files"  # in a tools/call's _meta: "link", large files by link
_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


class Shelf(wire.Shelf):
    """:class:`wire.Shelf`, read as the SDK's types."""

    def read(self, uri: str) -> types.BlobResourceContents | None:
        """The file a link points at, or None when it is unknown or already dropped."""
        found = self.contents(uri)
        return None if found is None else types.BlobResourceContents.model_validate(found)

    def listing(self) -> list[types.Resource]:
        """What ``resources/list`` shows: the files still kept."""
        return [types.Resource.model_validate(r) for r in self.resources()]


def to_result(
    response: dict[str, Any], shelf: wire.Shelf | None, limit: int | None = None
) -> types.CallToolResult:
    """The MCP result of one protocol response (``shelf`` None: every file embedded)."""
    return types.CallToolResult.model_validate(wire.result(response, shelf, limit))


def binary_content(name: str, mime: str, blob: str, shelf: wire.Shelf | None) -> types.ContentBlock:
    """A picture as ``image`` content, any other file embedded or linked."""
    return _BLOCK.validate_python(wire.binary_block(name, mime, blob, shelf))


def shelved(result: types.CallToolResult, shelf: wire.Shelf) -> types.CallToolResult:
    """``result`` with each embedded file over ``EMBED_LIMIT`` put on ``shelf`` and linked:
    what a remote server embedded reaches the host as ``mcp --local`` would give it."""
    content = [_shelve(block, shelf) for block in result.content]
    return result.model_copy(update={"content": content})


def _shelve(block: types.ContentBlock, shelf: wire.Shelf) -> types.ContentBlock:
    if not isinstance(block, types.EmbeddedResource):
        return block
    resource = block.resource
    if not isinstance(resource, types.BlobResourceContents) or len(resource.blob) <= EMBED_LIMIT:
        return block
    name = str(resource.uri).rsplit("/", 1)[-1]
    mime = resource.mime_type or guess_mime(name)
    return _BLOCK.validate_python(wire.file_block(name, mime, resource.blob, shelf))
