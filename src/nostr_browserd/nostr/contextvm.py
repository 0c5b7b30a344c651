"""ContextVM (MCP over Nostr): its message kind, its gift wraps, its announcement kinds.

- Every MCP message is a signed kind 25910 whose ``content`` is the JSON-RPC message; a
  request carries ``["p", server]``, a response or a notification about a request
  ``["p", client]`` and ``["e", request event id]``.
- CEP-4: the signed kind 25910 is NIP-44-encrypted, under a one-time key, straight into the
  ``content`` of a kind 1059 gift wrap (no seal, unlike NIP-17), so the sender is the inner
  event's own signature.  CEP-19 adds the same wrap as ephemeral kind 21059.
- CEP-6: kind 11316 announces a server, kind 11317 its tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..untrusted_json import BadJSON
from ..untrusted_json import loads as loads_json
from . import nip44
from .keys import generate_secret, is_valid_pubkey
from .nip01 import Event, InvalidEvent, finalize_event, now, tag_values, verify_event
from .nip59 import GIFT_WRAP_KIND, UnwrapError
from .signer import Signer

MESSAGE_KIND = 25910
EPHEMERAL_WRAP_KIND = 21059
WRAP_KINDS = (GIFT_WRAP_KIND, EPHEMERAL_WRAP_KIND)
SERVER_ANNOUNCEMENT_KIND = 11316
TOOLS_LIST_KIND = 11317
SUPPORT_ENCRYPTION = "support_encryption"
SUPPORT_ENCRYPTION_EPHEMERAL = "support_encryption_ephemeral"
SUPPORT_OVERSIZED_TRANSFER = "support_oversized_transfer"
NIP44_MAX_PLAINTEXT = 65_535
"""NIP-44 encrypts at most this many bytes: a signed message must fit in it to be wrapped."""


def message_template(
    content: str,
    recipient: str,
    reply_to: str | None = None,
    extra_tags: Sequence[list[str]] = (),
) -> dict[str, Any]:
    """An unsigned kind 25910 to ``recipient``; a response cites its request's event id."""
    tags = [["p", recipient]] + ([["e", reply_to]] if reply_to else []) + list(extra_tags)
    return {"kind": MESSAGE_KIND, "content": content, "tags": tags, "created_at": now()}


def wrap(message: Event, recipient: str, kind: int = GIFT_WRAP_KIND) -> Event:
    """A signed kind 25910 in a gift wrap (kind 1059, or ephemeral 21059) to ``recipient``.

    The wrap is dated now, not back-dated as NIP-59's are: its only metadata is the
    recipient, and a ContextVM client subscribes from the moment it starts.
    """
    if kind not in WRAP_KINDS:
        raise ValueError(f"kind {kind} is not a ContextVM gift wrap")
    if not is_valid_pubkey(recipient):
        raise ValueError("recipient is not a valid public key")
    if not fits(message):
        raise ValueError("the message does not fit in one wrap (NIP-44's plaintext limit)")
    one_time = generate_secret()
    body = _dumps(message)
    content = nip44.encrypt(body, nip44.conversation_key(one_time, recipient))
    template = {"kind": kind, "content": content, "tags": [["p", recipient]], "created_at": now()}
    return finalize_event(template, one_time)


def fits(message: Event) -> bool:
    """Whether a signed message is small enough to be wrapped (NIP-44's plaintext limit)."""
    return len(_dumps(message).encode()) <= NIP44_MAX_PLAINTEXT


def _dumps(event: Event) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def inner_message(inner: object, recipient: str) -> Event:
    """The kind 25910 a wrap carried, once its own signature is verified and it is addressed
    to ``recipient``: its ``pubkey`` is then the authenticated sender."""
    try:
        verify_event(inner)
    except InvalidEvent as exc:
        raise UnwrapError(f"ContextVM message: {exc.reason}") from None
    assert isinstance(inner, dict)
    if inner["kind"] != MESSAGE_KIND:
        raise UnwrapError(f"ContextVM message: kind is {inner['kind']}, expected {MESSAGE_KIND}")
    if recipient not in tag_values(inner, "p"):
        raise UnwrapError("ContextVM message: not addressed to us")
    return inner


async def unwrap(wrap_event: Event, signer: Signer) -> object:
    """The decrypted content of a ContextVM gift wrap, parsed, not yet verified (see
    :func:`inner_message`)."""
    try:
        verify_event(wrap_event)
    except InvalidEvent as exc:
        raise UnwrapError(f"gift wrap: {exc.reason}") from None
    if wrap_event["kind"] not in WRAP_KINDS:
        raise UnwrapError(f"gift wrap: kind {wrap_event['kind']} is not a ContextVM wrap")
    try:
        text = await signer.nip44_decrypt(wrap_event["pubkey"], wrap_event["content"])
    except ValueError as exc:
        raise UnwrapError(f"gift wrap: cannot decrypt ({exc})") from None
    try:
        return loads_json(text)
    except BadJSON:
        raise UnwrapError("gift wrap: the content is not JSON") from None


# --- CEP-22: a message too big for one event, as notifications/progress frames ---------------

OVERSIZED = "oversized-transfer"
CHUNK_CHARS = 24_000
"""Characters of the serialized message per chunk frame: escaped twice (in the frame's JSON,
then in the event's content) and wrapped, a chunk stays well inside NIP-44's limit."""


def oversized_frames(serialized: str, token: str | int) -> list[dict[str, Any]]:
    """The ``notifications/progress`` messages that carry ``serialized`` (a whole JSON-RPC
    message) under ``token``: start (digest, sizes), the chunks, end."""
    data = serialized.encode()
    chunks = [serialized[i : i + CHUNK_CHARS] for i in range(0, len(serialized), CHUNK_CHARS)]
    start = {
        "type": OVERSIZED,
        "frameType": "start",
        "completionMode": "render",
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "totalBytes": len(data),
        "totalChunks": len(chunks),
    }
    frames = [start] + [{"type": OVERSIZED, "frameType": "chunk", "data": c} for c in chunks]
    frames.append({"type": OVERSIZED, "frameType": "end"})
    return [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n, "cvm": frame},
        }
        for n, frame in enumerate(frames, start=1)
    ]


class Reassembly:
    """A CEP-22 transfer being received: :meth:`take` each frame, the whole message at the end."""

    def __init__(self) -> None:
        self._start: dict[str, Any] | None = None
        self._chunks: dict[float, str] = {}  # by progress: relays may reorder

    @staticmethod
    def is_frame(message: dict[str, Any]) -> bool:
        """Whether ``message`` is a CEP-22 frame (not an ordinary progress notice)."""
        params = message.get("params")
        cvm = params.get("cvm") if isinstance(params, dict) else None
        return isinstance(cvm, dict) and cvm.get("type") == OVERSIZED

    def take(self, message: dict[str, Any]) -> str | None:
        """The serialized whole once the end frame came (digest checked), else None.

        Chunks are put in the order of their ``progress``; a missing or foreign one shows as
        a digest that does not match, and raises ValueError.
        """
        frame, progress = message["params"]["cvm"], message["params"].get("progress")
        kind = frame.get("frameType")
        if kind == "start":
            self._start, self._chunks = frame, {}
        elif kind == "chunk" and self._start is not None and isinstance(progress, int | float):
            self._chunks[progress] = str(frame.get("data", ""))
        elif kind == "end" and self._start is not None:
            whole = "".join(self._chunks[n] for n in sorted(self._chunks))
            digest = "sha256:" + hashlib.sha256(whole.encode()).hexdigest()
            if digest != self._start.get("digest"):
                raise ValueError("an oversized transfer whose digest does not match")
            return whole
        elif kind == "abort":
            raise ValueError(f"the sender aborted the transfer: {frame.get('reason', '')}")
        return None
