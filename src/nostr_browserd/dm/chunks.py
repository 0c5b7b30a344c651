"""Splitting a reply too big for one direct message into numbered parts, and joining them.

A NIP-44 plaintext holds at most 65,535 bytes, and a gift wrap nests the reply twice (rumor in
seal in wrap, each base64), so the wrap is ~1.8× the reply; many relays cap events at 64–128 KB.
A reply over ``DEFAULT_PART_BYTES`` is therefore sent as parts, each a JSON object::

    {"id": <request id>, "part": 1, "parts": 3, "sha256": <hex of the whole>, "data": "..."}

``data`` is a slice of the whole reply's text, cut on character boundaries so that each part,
escaped as ``data`` and again as the event's content, stays within the budget.  The receiver
joins the slices in order and checks the hash: the reply comes back byte for byte, screenshots
included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ..untrusted_json import json_object

DEFAULT_PART_BYTES = 24_000
PART_KEYS = frozenset({"id", "part", "parts", "sha256", "data"})


class ReassemblyError(ValueError):
    """Parts that do not make a whole: missing, duplicated with different data, or corrupt."""


def wire_size(text: str) -> int:
    """Bytes ``text`` takes once JSON-escaped as an event's content (a NIP-17 rumor's, say)."""
    return len(json.dumps(text, ensure_ascii=False).encode())


def _slice_cost(piece: str) -> int:
    # A slice is escaped twice: as ``data`` inside the part, then as the part inside the event.
    return wire_size(json.dumps(piece, ensure_ascii=False))


def _slices(text: str, budget: int) -> list[str]:
    """Cut ``text`` into slices that cost at most ``budget`` bytes on the wire."""
    out: list[str] = []
    pending = [text]
    while pending:
        piece = pending.pop()
        if len(piece) == 1 or _slice_cost(piece) <= budget:
            out.append(piece)
            continue
        raw = piece.encode()
        cut = min(budget, len(raw) // 2) if len(raw) > budget else len(raw) // 2
        while cut > 0 and (raw[cut] & 0xC0) == 0x80:  # do not split a UTF-8 sequence
            cut -= 1
        head = raw[:cut].decode() or piece[0]
        pending.extend([piece[len(head) :], head])
    return out


def split(text: str, request_id: Any, budget: int = DEFAULT_PART_BYTES) -> list[str]:
    """``[text]`` if it fits in ``budget`` bytes on the wire, else the JSON parts that carry it."""
    if wire_size(text) <= budget:
        return [text]
    digest = hashlib.sha256(text.encode()).hexdigest()
    slices = _slices(text, budget)
    return [
        json.dumps(
            {"id": request_id, "part": n, "parts": len(slices), "sha256": digest, "data": s},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for n, s in enumerate(slices, 1)
    ]


def as_part(message: str) -> dict[str, Any] | None:
    """The part a message carries, or None when it is a whole reply."""
    obj = json_object(message)
    return obj if obj is not None and set(obj) == PART_KEYS else None


def reassemble(parts: Iterable[dict[str, Any]]) -> str | None:
    """The whole text once every part of one reply is present, else None.

    Raises ``ReassemblyError`` when the parts disagree or the joined text fails its hash.
    """
    by_number: dict[int, str] = {}
    total = digest = None
    for part in parts:
        if digest is None:
            total, digest = part["parts"], part["sha256"]
        if part["sha256"] != digest or part["parts"] != total:
            raise ReassemblyError("parts of different replies were mixed")
        number = part["part"]
        if not isinstance(number, int) or not 1 <= number <= total:
            raise ReassemblyError(f"part number {number!r} is outside 1..{total}")
        if by_number.setdefault(number, part["data"]) != part["data"]:
            raise ReassemblyError(f"part {number} arrived twice with different data")
    if total is None or len(by_number) < total:
        return None
    whole = "".join(by_number[n] for n in range(1, total + 1))
    if hashlib.sha256(whole.encode()).hexdigest() != digest:
        raise ReassemblyError("the joined parts do not match their sha256")
    return whole
