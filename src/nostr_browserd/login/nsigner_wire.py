"""The n_signer's line framing over qrexec, in one place so the real protocol drops in.

Until the n_signer's own wire format is public we speak the NIP-46 method vocabulary,
one JSON object per line: request ``{"id", "method", "params": [strings], "index": N}``,
response ``{"id", "result"}`` or ``{"id", "error"}``.  Lines, not EOF, frame messages
(some qrexec service types do not forward EOF).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..untrusted_json import loads as loads_json

__all__ = ["MAX_LINE", "WireError", "WireReply", "decode_reply", "encode_request"]

MAX_LINE = 1 << 20


class WireError(ValueError):
    """A line from the signer that is not a well-formed reply."""


@dataclass(frozen=True)
class WireReply:
    """One decoded reply: exactly one of ``result`` and ``error`` is set."""

    id: str
    result: str | None
    error: str | None


def encode_request(req_id: str, method: str, params: Sequence[str], index: int) -> bytes:
    """One request line, newline-terminated."""
    body = {"id": req_id, "method": method, "params": list(params), "index": index}
    return json.dumps(body, separators=(",", ":")).encode("utf-8") + b"\n"


def decode_reply(line: bytes) -> WireReply:
    """Parse one reply line; :class:`WireError` says what was wrong (never echoes it)."""
    try:
        body = loads_json(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WireError("the signer's answer is not a JSON line") from None
    if not isinstance(body, dict) or not isinstance(body.get("id"), str):
        raise WireError("the signer's answer is not an object with a string id")
    result, error = body.get("result"), body.get("error")
    if (result is None) == (error is None):
        raise WireError("the signer's answer needs exactly one of result and error")
    if not isinstance(result if error is None else error, str):
        raise WireError("the signer's result or error is not a string")
    return WireReply(body["id"], result, error)
