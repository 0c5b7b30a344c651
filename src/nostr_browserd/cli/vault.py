"""``nostr-browserd vault add|list|remove``: the local owner's credential vault, from a shell.

Like ``keys``: when the daemon runs, the command goes to it over the local channel
(``vault_add``, ``vault_list``, ``vault_remove``, run as the local owner), so its signer seals
the entry; when nothing answers, this process logs in with the configured identity and opens
the state store itself.  ``add`` reads the values from stdin, one per line (the username, the
password, optionally the TOTP secret), or asks for them on a terminal without echo: never
from argv, where any user could read them in the process list.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..daemon.config import Config, load_config
from ..daemon.local_ws import OWNER
from ..daemon.store import open_store
from ..errors import BrowserdError, ErrorCode
from ..nostr.signer import Signer
from ..vault.entry import Entry
from ..vault.keeper import Vault
from .keys import by_ourselves, through_daemon

USAGE = "usage: vault add NAME --origin URL [--origin URL…] | vault list | vault remove NAME"


def read_values(stream: Any = None) -> dict[str, str]:
    """The username, the password and the optional TOTP secret, from ``stream`` (stdin)."""
    stream = stream or sys.stdin
    if stream.isatty():
        import getpass

        return {
            "username": input("Username: "),
            "password": getpass.getpass("Password (not shown): "),
            "totp": getpass.getpass("TOTP secret or otpauth:// URI (not shown; Enter for none): "),
        }
    lines = stream.read().splitlines()
    if not 2 <= len(lines) <= 3:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            "vault add reads 2 or 3 lines from stdin: the username, the password, and "
            "optionally the TOTP secret; nothing stored.",
        )
    return dict(zip(("username", "password", "totp"), lines, strict=False))


@dataclass(frozen=True)
class VaultOptions:
    """``vault``: what to do with which entry, for the daemon of ``config``."""

    config: Path | None
    action: Literal["add", "list", "remove"]
    name: str | None
    origin: list[str] | None


async def vault_command(options: VaultOptions) -> int:
    """Run ``vault ACTION``; prints the outcome (never a value); returns the exit code."""
    action, name, origins = options.action, options.name, options.origin
    if (action == "list") != (name is None) or (action == "add") != bool(origins):
        print(f"nostr-browserd: {USAGE}", file=sys.stderr)
        return 2
    config = load_config(options.config)
    params: dict[str, Any] = {"name": name} if name else {}
    try:
        if action == "add":
            params |= {"origins": origins or [], **read_values()}
        data = await through_daemon(config, f"vault_{action}", params)
        if data is None:
            data = await by_ourselves(config, lambda signer: _alone(config, signer, action, params))
    except BrowserdError as exc:
        print(f"nostr-browserd: {exc.message}", file=sys.stderr)
        return 1
    for entry in data.get("entries", [data["added"]] if "added" in data else []):
        totp = ", with a TOTP" if entry["totp"] else ""
        unusable = (
            "" if entry.get("usable", True) else " (sealed to another identity: add it again)"
        )
        print(f"{entry['name']}: {', '.join(entry['origins'])}{totp}{unusable}")
    if "removed" in data:
        print(f"removed {data['removed']}")
    return 0


async def _alone(config: Config, signer: Signer, action: str, params: dict[str, Any]) -> Any:
    store = await open_store(config.state)
    try:
        vault = Vault(store, lambda: signer)
        if action == "add":
            return {"added": await vault.add(OWNER, Entry.checked(**params))}
        if action == "list":
            return {"entries": await vault.entries(OWNER)}
        return await vault.remove(OWNER, params["name"])
    finally:
        await store.close()
