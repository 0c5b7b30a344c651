"""``nostr-browserd send``: one command to a daemon over Nostr, and its signed reply.

The command is parsed here first (JSON, or the text grammar), so a typo fails at once rather
than after a round trip, and it always travels as a JSON request: the reply is then JSON too,
which lets a screenshot be saved to a file; a text command is still printed as text.

The reply is accepted only if it is authenticated as the daemon's (seal pubkey == rumor
pubkey == ``--to`` for NIP-17, the event signature for NIP-04) and references our request.
Parts are reassembled and checked against their sha256.
"""

from __future__ import annotations

import argparse
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
from ..errors import BrowserdError
from ..login.nsec import signer_from_file
from ..nostr import nip17
from ..nostr.nip01 import Event, now, tag_values
from ..nostr.nip19 import Bech32Error, parse_pubkey
from ..nostr.nip59 import UnwrapError, make_rumor, wrap
from ..nostr.relay import RelayPool
from ..nostr.signer import KeySigner
from .chunks import ReassemblyError, as_part, reassemble
from .config import DEFAULT_EMBEDDED_RELAY_PORT
from .inbox import DM_KIND
from .pending import as_pending

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 4


class Conversation:
    """One request to a daemon and the collection of its reply's parts."""

    def __init__(self, signer: KeySigner, daemon: str, nip04: bool) -> None:
        self.signer, self.daemon, self.nip04 = signer, daemon, nip04
        self.request_event_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def reply_filter(self) -> dict[str, Any]:
        """Live events only (``limit: 0``): we subscribe before sending."""
        me = self.signer.pubkey
        if self.nip04:
            return {"kinds": [DM_KIND], "authors": [self.daemon], "#p": [me], "limit": 0}
        return {"kinds": [1059], "#p": [me], "limit": 0}

    async def request(self, content: str) -> Event:
        """The event carrying ``content`` to the daemon; remembers what a reply must cite."""
        if self.nip04:
            template = {
                "kind": DM_KIND,
                "content": await self.signer.nip04_encrypt(self.daemon, content),
                "tags": [["p", self.daemon]],
                "created_at": now(),
            }
            event = await self.signer.sign_event(template)
            self.request_event_id = event["id"]
            return event
        rumor = make_rumor(self.signer.pubkey, nip17.CHAT_KIND, content, [["p", self.daemon]])
        self.request_event_id = rumor["id"]
        return await wrap(rumor, self.signer, self.daemon)

    async def open(self, event: Event) -> DaemonMessage | None:
        """``event`` opened, when it is authenticated as the daemon's message to us."""
        if self.nip04:
            if event["pubkey"] != self.daemon:
                return None
            text = await self.signer.nip04_decrypt(self.daemon, event["content"])
            return DaemonMessage(text, tuple(tag_values(event, "e")))
        try:
            opened = await nip17.open_dm(event, self.signer, kinds={nip17.CHAT_KIND})
        except UnwrapError:
            return None
        if opened.sender != self.daemon:
            return None
        return DaemonMessage(opened.rumor["content"], tuple(tag_values(opened.rumor, "e")))

    def collect(self, text: str) -> str | None:
        """The whole reply once ``text`` (a whole reply, or one part of it) completes it."""
        part = as_part(text)
        if part is None:
            return text
        self._parts.append(part)
        return reassemble(self._parts)

    async def accept(self, event: Event) -> str | None:
        """The whole reply once ``event`` completes it; None for unrelated events."""
        message = await self.open(event)
        if message is None or self.request_event_id not in message.cites:
            return None
        return self.collect(message.text)


@dataclass(frozen=True)
class DaemonMessage:
    """A message authenticated as the daemon's: its text and the events it cites (``e``)."""

    text: str
    cites: tuple[str, ...]


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


async def send_command(args: argparse.Namespace) -> int:
    """Send ``args.words`` to ``args.to`` and print the reply; the exit code says how it went."""
    try:
        daemon = parse_pubkey(args.to)
        signer = signer_from_file(args.key)
        request, text = _build_request(args.words)
    except (Bech32Error, BrowserdError) as exc:
        print(f"nostr-browserd send: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return EXIT_USAGE
    relays = args.relay or [f"ws://127.0.0.1:{DEFAULT_EMBEDDED_RELAY_PORT}"]
    talk = Conversation(signer, daemon, args.nip04)
    async with RelayPool(relays, auth_signer=signer) as pool:
        if not await pool.wait_connected(min(args.timeout, 10)):
            print(f"nostr-browserd send: cannot reach {', '.join(relays)}", file=sys.stderr)
            return EXIT_FAILED
        sub = pool.subscribe([talk.reply_filter()], advance_since=False)
        await sub.wait_eose(5)
        event = await talk.request(json.dumps(request, ensure_ascii=False))
        result = await pool.publish(event, min(args.timeout, 10))
        if not result.ok:
            print(
                f"nostr-browserd send: no relay took the command: {result.refused}", file=sys.stderr
            )
            return EXIT_FAILED
        whole = None
        try:
            async with asyncio.timeout(args.timeout):
                async for reply in sub:
                    whole = await talk.accept(reply)
                    if whole is not None and (held := as_pending(whole)) is not None:
                        print(f"nostr-browserd send: {held['message']}", file=sys.stderr)
                        whole = None
                    elif whole is not None:
                        break
        except TimeoutError:
            print(f"nostr-browserd send: no reply within {args.timeout:g} s", file=sys.stderr)
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
    saved = _save_binary(response, args.out)
    print(
        json.dumps(response, indent=2, ensure_ascii=False)
        if args.json or not text
        else render_text(response, len(whole))  # the daemon already cut it to its cap
    )
    if saved:
        print(f"saved {saved}", file=sys.stderr)
    return EXIT_OK if response.get("success") else EXIT_FAILED
