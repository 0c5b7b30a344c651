"""Where the daemon's time goes: a cProfile of it under load, summed by kind of work."""

from __future__ import annotations

import pstats
from typing import Any

# (kind, substrings of the file path or function name); the first match wins.
KINDS = [
    ("idle: waiting for events (epoll)", ("select.epoll",)),
    (
        "crypto (nip44/nip59/keys, coincurve, cryptography)",
        (
            "/nostr/nip44",
            "/nostr/nip59",
            "/nostr/keys",
            "/nostr/nip01",
            "coincurve",
            "cryptography",
            "_hashlib",
            "hmac",
            "secp256k1",
        ),
    ),
    ("JSON", ("/json/", "json.")),
    ("system calls: socket and pipe writes", ("_socket.socket", "posix.write", "posix.read")),
    ("SQLite (replay guard, audit)", ("sqlite3", "/daemon/store")),
    ("Playwright round trips", ("/playwright/",)),
    ("logging", ("/logging/",)),
    ("WebSockets (relay I/O)", ("/websockets/", "/nostr/relay")),
    ("pydantic (params)", ("pydantic",)),
    ("asyncio event loop", ("/asyncio/", "selectors")),
    ("daemon (inbox, dispatch, outbox)", ("/daemon/",)),
    ("tools and commands", ("/commands/", "/tools/", "/browser/")),
]


def kind_of(path: str, function: str) -> str:
    where = f"{path} {function}"
    for kind, marks in KINDS:
        if any(mark in where for mark in marks):
            return kind
    return "other"


def summary(path: str, top: int = 15) -> dict[str, Any]:
    """Own time per kind of work, the functions with the most own time (idle excluded), and
    the calls of each libsecp256k1 function (verifications, signatures, key derivations)."""
    stats = pstats.Stats(path)
    total = 0.0
    kinds: dict[str, float] = {}
    secp256k1: dict[str, int] = {}
    functions = []
    for (file, line, function), (_, calls, own, cumulative, _) in stats.stats.items():
        if "_libsecp256k1.secp256k1_" in function:
            name = function.split("_libsecp256k1.", 1)[1].rstrip(">")
            secp256k1[name] = secp256k1.get(name, 0) + calls
        kind = kind_of(file, function)
        kinds[kind] = kinds.get(kind, 0.0) + own
        if kind.startswith("idle"):
            continue
        total += own
        functions.append(
            (own, cumulative, calls, f"{file.split('site-packages/')[-1]}:{line} {function}")
        )
    functions.sort(reverse=True)
    return {
        "total_s": total,
        "kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        "secp256k1": dict(sorted(secp256k1.items(), key=lambda kv: -kv[1])),
        "top": [
            {"own_s": own, "cumulative_s": cum, "calls": calls, "function": name}
            for own, cum, calls, name in functions[:top]
        ],
    }
