"""Delivery, the pipeline's last stage: a response's wire form, its way back, and the audit.

Whatever ran, and whoever asked, the answer leaves through here: encoded once (text or
JSON, cut to the result cap), sent back in the scheme its sender wrote in, and recorded in
the audit trail with its outcome and whether it went out.  Delivery decides nothing about
the request: what may run was settled by admission, how it ran by the running stage.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..commands.protocol import Request, encode
from ..dm.messages import ReplyAddress, Scheme
from ..errors import BrowserdError
from ..redact import redact
from .store import Store, quietly

log = logging.getLogger(__name__)

Reply = Callable[[ReplyAddress, str, Any], Awaitable[bool]]
Send = Callable[[str, str, Scheme], Awaitable[bool]]
Response = dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """A handled command: the response, its wire form (text or JSON, as it came), and the
    request when the message parsed."""

    response: Response
    wire: str
    request: Request | None = None


def error_response(request_id: Any, error: BrowserdError) -> Response:
    """The protocol's failure shape."""
    return {"id": request_id, "success": False, "error": error.to_dict()}


class Delivery:
    """Encodes, sends and audits every answer; remembers each key's DM scheme."""

    def __init__(self, store: Store, reply: Reply, send: Send, result_cap: int) -> None:
        """``reply`` answers a message (by DM, or as MCP over ContextVM); ``send`` writes
        to a key outside any reply (an approval prompt, ask's progress)."""
        self.store, self.result_cap = store, result_cap
        self._reply, self._send = reply, send
        # Every key that wrote, approvers too (which have no lane): how to write back.
        self._schemes: dict[str, Scheme] = {}

    def scheme_of(self, pubkey: str) -> Scheme:
        """The DM scheme this key last wrote in (NIP-17 until it has written)."""
        return self._schemes.get(pubkey, "nip17")

    def wrote_in(self, pubkey: str, scheme: Scheme) -> None:
        """``pubkey`` wrote in ``scheme``: what is sent to it goes that way from now on."""
        self._schemes[pubkey] = scheme

    def encode(self, response: Response, as_text: bool) -> str:
        """``protocol.encode`` with the configured result cap."""
        return encode(response, as_text, self.result_cap)

    async def deliver(self, to: ReplyAddress, text: str, request_id: Any) -> bool:
        """A reply to the message ``to`` names, in its scheme; whether it went out."""
        try:
            return await self._reply(to, text, request_id)
        except Exception:
            log.exception("could not send the reply to %s", to.sender[:12])
            return False

    async def tell(self, recipient: str, text: str) -> bool:
        """A DM of ours (an approval prompt) to ``recipient``, in its scheme."""
        return await self._send(recipient, text, self.scheme_of(recipient))

    async def notify(self, recipient: str, text: str) -> bool:
        """A message to a controller outside any reply (ask's progress), in its scheme."""
        return await self.message(recipient, text, self.scheme_of(recipient))

    async def message(self, recipient: str, text: str, scheme: Scheme) -> bool:
        """A message of the daemon's own to ``recipient`` in ``scheme`` (a monitor's news);
        whether it went out."""
        try:
            return await self._send(recipient, text, scheme)
        except Exception:
            log.exception("could not send a message to %s", recipient[:12])
            return False

    async def audit(
        self,
        controller: str,
        transport: str,
        request: Request | None,
        response: Response,
        started: float,
        delivered: bool = True,
    ) -> None:
        """One row of the audit trail and one log line: who, what, the outcome, how long."""
        duration = (time.perf_counter() - started) * 1000
        outcome = "ok" if response.get("success") else response["error"]["code"]
        if not delivered:
            outcome += " (reply not delivered)"
        tool = request.tool if request else None
        params = request.params if request else None
        await quietly(
            self.store.audit(
                controller=controller,
                transport=transport,
                request_id=None if request is None else str(request.id),
                tool=tool,
                params=params,
                outcome=outcome,
                duration_ms=round(duration, 3),
            )
        )
        log.info(
            "%s from %s via %s: %s %s -> %s in %.1f ms",
            "command" if request is None else f"command {request.id}",
            controller[:12],
            transport,
            tool,
            shortened(json.dumps(redact(params), default=str)),
            outcome,
            duration,
        )


def shortened(text: str, limit: int = 200) -> str:
    """A log line's params: long ones are cut, and say so."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
