"""The notice a requester gets while its gated command waits for the approver.

Without it a held command looks like a lost one: ``send`` would time out and an MCP host
would hang silently.  The notice cites the request like a reply does, but it is not one:
it has ``"pending"`` and no ``"success"``, so a client keeps waiting for the real answer.
"""

from __future__ import annotations

import json
from typing import Any

from ..untrusted_json import json_object


def notice(request_id: Any, tool: str, expires_in: float, text: bool) -> str:
    """``{"pending": "approval", "request", "expires_in", "message"}``, or its message as text.

    No ``id`` key: a client that matches replies by id must not take this for the reply.
    """
    message = (
        f"{tool} is waiting for the approver, who was asked by direct message; "
        f"it runs once approved, and is denied after {expires_in:g} s."
    )
    if text:
        return f"⏳ {message}"
    return json.dumps(
        {
            "pending": "approval",
            "request": request_id,
            "expires_in": expires_in,
            "message": message,
        },
        ensure_ascii=False,
    )


def as_pending(message: str) -> dict[str, Any] | None:
    """The notice ``message`` is, or None when it is anything else (a reply, a part…)."""
    obj = json_object(message)
    if obj is not None and obj.get("pending") == "approval" and "success" not in obj:
        return obj
    return None
