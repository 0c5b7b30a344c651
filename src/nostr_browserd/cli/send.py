"""``nostr-browserd send``: one command to a daemon over Nostr, and its signed reply.

The command is parsed here first (JSON, or the text grammar), so a typo fails at once rather
than after a round trip, and it always travels as a JSON request: the reply is then JSON too,
which lets a screenshot be saved to a file; a text command is still printed as text.

The reply is accepted only if it is authenticated as the daemon's (seal pubkey == rumor
pubkey == ``--to`` for NIP-17, the event signature for NIP-04) and references our request.
Parts are reassembled and checked against their sha256.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..catalog import REGISTRY
from ..commands.protocol import is_text, parse_request
from ..commands.render import render_text
from ..daemon.ports import DEFAULT_EMBEDDED_RELAY_PORT
from ..dm.chunks import ReassemblyError
from ..dm.conversation import Conversation
from ..dm.pending import as_pending
from ..errors import BrowserdError
from ..login.nsec import signer_from_file
from ..nostr.nip19 import Bech32Error, parse_pubkey
from ..nostr.relay import RelayPool

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 4


@dataclass(frozen=True)
class SendOptions:
    """``send``'s options: whom to ask, as whom, over which relays, and how to print."""

    to: str
    key: Path
    words: list[str]
    relay: list[str]
    nip04: bool = False
    json: bool = False
    timeout: float = 60.0
    out: Path | None = None


def _build_request(words: list[str]) -> tuple[dict[str, Any], bool]:
    """The JSON request for the command words, and whether they were the text grammar."""
    raw = shlex.join(words) if is_text(words[0]) else " ".join(words)
    request = parse_request(raw, REGISTRY)
    if request.id is None:
        request.id = secrets.token_hex(4)
    return {"id": request.id, "tool": request.tool, "params": request.params}, request.text


def _save_binary(response: dict[str, Any], out: Path | None) -> Path | None:
    """Write a screenshot (base64 in ``data``) to a file and put its path in its place."""
    data = response.get("data")
    if not isinstance(data, dict) or "base64" not in data:
        return None
    extension = str(data.get("mime", "image/png")).split("/")[-1].replace("jpeg", "jpg")
    path = out or Path(f"screenshot-{response.get('id')}.{extension}")
    path.write_bytes(base64.b64decode(data.pop("base64")))
    data["saved_to"] = str(path)
    return path


async def send_command(options: SendOptions) -> int:
    """Send ``options.words`` to ``options.to`` and print the reply; the exit code says how
    it went."""
    try:
        daemon = parse_pubkey(options.to)
        signer = signer_from_file(options.key)
        request, text = _build_request(options.words)
    except (Bech32Error, BrowserdError) as exc:
        print(f"nostr-browserd send: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return EXIT_USAGE
    relays = options.relay or [f"ws://127.0.0.1:{DEFAULT_EMBEDDED_RELAY_PORT}"]
    talk = Conversation(signer, daemon, options.nip04)
    async with RelayPool(relays, auth_signer=signer) as pool:
        if not await pool.wait_connected(min(options.timeout, 10)):
            print(f"nostr-browserd send: cannot reach {', '.join(relays)}", file=sys.stderr)
            return EXIT_FAILED
        sub = pool.subscribe([talk.reply_filter()], advance_since=False)
        await sub.wait_eose(5)
        event = await talk.request(json.dumps(request, ensure_ascii=False))
        result = await pool.publish(event, min(options.timeout, 10))
        if not result.ok:
            print(
                f"nostr-browserd send: no relay took the command: {result.refused}", file=sys.stderr
            )
            return EXIT_FAILED
        whole = None
        try:
            async with asyncio.timeout(options.timeout):
                async for reply in sub:
                    whole = await talk.accept(reply)
                    if whole is not None and (held := as_pending(whole)) is not None:
                        print(f"nostr-browserd send: {held['message']}", file=sys.stderr)
                        whole = None
                    elif whole is not None:
                        break
        except TimeoutError:
            print(f"nostr-browserd send: no reply within {options.timeout:g} s", file=sys.stderr)
            return EXIT_TIMEOUT
        except ReassemblyError as exc:
            print(f"nostr-browserd send: the reply's parts are corrupt: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if whole is None:
        print("nostr-browserd send: the relays ended the subscription", file=sys.stderr)
        return EXIT_FAILED
    try:
        response = json.loads(whole)
    except ValueError:
        print(whole)
        return EXIT_OK
    saved = _save_binary(response, options.out)
    print(
        json.dumps(response, indent=2, ensure_ascii=False)
        if options.json or not text
        else render_text(response, len(whole))  # the daemon already cut it to its cap
    )
    if saved:
        print(f"saved {saved}", file=sys.stderr)
    return EXIT_OK if response.get("success") else EXIT_FAILED
