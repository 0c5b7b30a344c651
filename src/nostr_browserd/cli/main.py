"""``nostr-browserd``: run the daemon, ask it for its status, send it a command, and more.

nostr-browserd run [--config PATH]
nostr-browserd status [--config PATH] [--json]
nostr-browserd send --to NPUB --key FILE [--relay URL …] [--nip04] [--json] COMMAND…
nostr-browserd keygen FILE
nostr-browserd keys [--config PATH] set PROVIDER | status | clear PROVIDER   (key from stdin)
nostr-browserd vault [--config PATH] add NAME --origin URL… | list | remove NAME   (values: stdin)
nostr-browserd bunker …            (a NIP-46 remote signer: see ``bunker --help``)
nostr-browserd mcp …               (an MCP server for agent hosts: see ``mcp --help``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import __version__
from ..daemon.config_error import ConfigError
from ..daemon.ports import DEFAULT_EMBEDDED_RELAY_PORT
from ..errors import BrowserdError, ErrorCode, said
from .options import parsed

if TYPE_CHECKING:
    from ..daemon.config import Config

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_RUNNING = 0, 1, 2, 3


@dataclass(frozen=True)
class RunOptions:
    """``run``: the config file (none: the local default setup) and how much to log."""

    config: Path | None
    verbose: bool


@dataclass(frozen=True)
class StatusOptions:
    """``status``: whose status (the daemon's config file), as text or JSON."""

    config: Path | None
    json: bool


@dataclass(frozen=True)
class KeysOptions:
    """``keys``: what to do with which provider's API key, for the daemon of ``config``."""

    config: Path | None
    action: Literal["set", "status", "clear"]
    provider: str | None


@dataclass(frozen=True)
class KeygenOptions:
    """``keygen``: where the new key goes."""

    file: Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nostr-browserd",
        description="A headless browser driven over encrypted Nostr direct messages.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the daemon (no config: a local default setup)")
    run.add_argument("--config", type=Path, help="TOML config file (see config.example.toml)")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")

    status = sub.add_parser("status", help="show the running daemon's status")
    status.add_argument("--config", type=Path, help="the daemon's config file")
    status.add_argument("--json", action="store_true", help="print the raw status JSON")

    send = sub.add_parser("send", help="send one command to a daemon and print its reply")
    send.add_argument("--to", required=True, help="the daemon's npub (or hex public key)")
    send.add_argument("--key", required=True, type=Path, help="your key file (nsec, mode 0600)")
    send.add_argument(
        "--relay",
        action="append",
        default=[],
        help=f"relay URL, repeatable (default ws://127.0.0.1:{DEFAULT_EMBEDDED_RELAY_PORT})",
    )
    send.add_argument("--nip04", action="store_true", help="send as legacy NIP-04 (kind 4)")
    send.add_argument("--json", action="store_true", help="print the JSON response")
    send.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default 60)")
    send.add_argument("--out", type=Path, help="where to save a screenshot (default: by id)")
    send.add_argument(
        "words", nargs=argparse.REMAINDER, metavar="COMMAND…", help="e.g. snapshot -i, or JSON"
    )

    keygen = sub.add_parser("keygen", help="write a new key (mode 0600) and print its npub")
    keygen.add_argument("file", type=Path, help="where to write the nsec (new, or empty 0600)")

    keys = sub.add_parser("keys", help="the model providers' API keys for ask (set reads stdin)")
    keys.add_argument("--config", type=Path, help="the daemon's config file")
    keys.add_argument("action", choices=("set", "status", "clear"))
    keys.add_argument("provider", nargs="?", help="anthropic, openai or openrouter")

    vault = sub.add_parser("vault", help="the local owner's logins (add reads the values on stdin)")
    vault.add_argument("--config", type=Path, help="the daemon's config file")
    vault.add_argument("action", choices=("add", "list", "remove"))
    vault.add_argument("name", nargs="?", help="the entry's name")
    vault.add_argument("--origin", action="append", help="an origin it fills on (repeatable)")

    sub.add_parser("bunker", help="run a NIP-46 remote signer (bunker) for a key", add_help=False)
    sub.add_parser("mcp", help="serve every tool to an MCP host (see mcp --help)", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bunker"]:
        from .bunker import main as bunker_main

        return bunker_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from .mcp import main as mcp_main

        return mcp_main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        return _command(args)
    except ConfigError as exc:
        print(f"nostr-browserd: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_FAILED
    except BrokenPipeError:  # `send … | head`: the reader has all it wanted
        _silence_stdout()
        return EXIT_FAILED


def _command(args: argparse.Namespace) -> int:
    """Run the parsed subcommand (every one but bunker and mcp, which parse their own)."""
    if args.command == "run":
        run = parsed(RunOptions, args)
        return _run(run.config, run.verbose)
    if args.command == "status":
        status = parsed(StatusOptions, args)
        return _status(_load(status.config), status.json)
    if args.command == "send":
        from .send import SendOptions, send_command

        if not args.words:
            _parser().error("send needs a command, e.g. get title")
        return asyncio.run(send_command(parsed(SendOptions, args)))
    if args.command == "keys":
        from .keys import keys_command

        keys = parsed(KeysOptions, args)
        if (keys.action == "status") != (keys.provider is None):
            takes = "no provider" if keys.action == "status" else "a provider"
            _parser().error(f"keys {keys.action} takes {takes}")
        return asyncio.run(keys_command(_load(keys.config), keys.action, keys.provider))
    if args.command == "vault":
        from .vault import VaultOptions, vault_command

        return asyncio.run(vault_command(parsed(VaultOptions, args)))
    return _keygen(parsed(KeygenOptions, args).file)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _load(path: Path | None) -> Config:
    from ..daemon.config import load_config

    return load_config(path)


# --- run -----------------------------------------------------------------------------------


def _run(path: Path | None, verbose: bool) -> int:
    from .run import serve

    try:
        return asyncio.run(serve(path, verbose))
    except (BrowserdError, OSError) as exc:
        print(f"nostr-browserd: cannot start: {said(exc)}", file=sys.stderr)
        return EXIT_FAILED


# --- status --------------------------------------------------------------------------------


def fetch_status(port: int, token: str | None, timeout: float = 5.0) -> dict[str, Any] | None:
    """The running daemon's status from its local HTTP endpoint, or None if none answers.

    A daemon that answers but refuses the token is an error, not "not running".
    """
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}/")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status: dict[str, Any] = json.loads(response.read())
            return status
    except urllib.error.HTTPError as exc:
        raise BrowserdError(
            ErrorCode.FORBIDDEN,
            f"the daemon on 127.0.0.1:{port} refused the status request ({exc.code}): "
            "run status with the daemon's config, as a user who can read its local token",
        ) from None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _local_token(config: Config) -> str | None:
    """The token a running daemon uses, when this user can read it (else None)."""
    from ..daemon.local_ws import load_token

    try:
        return load_token(config.local.token_path(config.state.dir), generate=False)
    except BrowserdError:
        return None


async def _stored_status(config: Config) -> dict[str, Any]:
    """What the state store says while this daemon is stopped: the workers sharing it (others
    may be running), their leases, and the last commands recorded."""
    from ..daemon.store import open_store

    store = await open_store(config.state)
    try:
        return {
            "workers": [w.to_dict() for w in await store.workers()],
            "leases": [lease.to_dict() for lease in await store.leases()],
            "recent": [e.to_dict() for e in await store.recent(10)],
        }
    finally:
        await store.close()


def _status(config: Config, as_json: bool) -> int:
    status = None
    if config.local.enabled:
        try:
            status = fetch_status(config.local.port, _local_token(config))
        except BrowserdError as exc:
            print(f"nostr-browserd: {exc.message}", file=sys.stderr)
            return EXIT_FAILED
    if status is None:
        print(f"nostr-browserd is not running (nothing answers on 127.0.0.1:{config.local.port}).")
        if config.state.database or (config.state.dir / "state.sqlite3").exists():
            try:
                stored = asyncio.run(_stored_status(config))
            except BrowserdError as exc:
                print(f"nostr-browserd: {exc.message}", file=sys.stderr)
                return EXIT_NOT_RUNNING
            _print_workers(stored["workers"], stored["leases"])
            _print_recent(stored["recent"])
        return EXIT_NOT_RUNNING
    if as_json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
        return EXIT_OK
    identity = status.get("identity", {})
    print(f"nostr-browserd {status.get('version')}, up {status.get('uptime')} s")
    if identity.get("logged_in"):
        print(f"identity: {identity.get('npub')} ({identity.get('method')})")
    else:
        print("identity: none, waiting for login (login on the local channel)")
    print(f"direct messages: {status.get('direct_messages')}")
    print("relays:")
    for url, relay in (status.get("relays") or {}).items():
        error = f"  last error: {relay['last_error']}" if relay.get("last_error") else ""
        print(f"  {url}: {relay.get('state')}{error}")
    print("controllers:")
    for c in status.get("controllers") or []:
        approver = f", approver {c['approver']}" if c.get("approver") else ""
        print(f"  {c['npub']} {c.get('name') or ''} role={c['role']}{approver}")
    print("browser endpoints:")
    for e in status.get("endpoints") or []:
        limit = f"/{e['limit']}" if e.get("limit") is not None else ""
        error = f"  last error: {e['error']}" if e.get("error") else ""
        print(
            f"  {e['url']}: {e['state']}, contexts {e['contexts']}{limit}, "
            f"~{e['estimated_mb']:g} MB, network policy: {e['network_policy']}{error}"
        )
    _print_approvals(status.get("approvals") or [])
    _print_monitors(status.get("monitors"))
    _print_workers(status.get("workers") or [], status.get("leases") or [])
    _print_recent(status.get("recent") or [])
    if status.get("live_view"):
        print(f"live view (watch only): {status['live_view']}")
    return EXIT_OK


def _print_approvals(approvals: list[dict[str, Any]]) -> None:
    import time

    if approvals:
        print("approvals waiting:")
    for a in approvals:
        left = max(0.0, a["expires"] - time.time())
        print(
            f"  {a['tool']} for {a['controller'][:16]}…, asked of {a['approver'][:16]}…"
            f" on {a['worker']} (forgotten in {left:.0f} s)"
        )


def _print_monitors(counts: dict[str, Any] | None) -> None:
    """How many monitors and schedules there are, failing and paused, and the next due."""
    import time

    if not counts:
        return
    due = counts.get("next_due")
    when = f", next due in {max(0.0, due - time.time()):.0f} s" if due else ""
    print(
        f"monitors: {counts['monitors']} ({counts['failing']} failing), schedules:"
        f" {counts['schedules']}, paused: {counts['paused']}{when}"
    )


LEASES_SHOWN = 20


def _print_workers(workers: list[dict[str, Any]], leases: list[dict[str, Any]]) -> None:
    """The workers sharing the state store, the load on each, and who serves which controller."""
    from ..nostr.nip19 import npub_encode

    if not workers:
        return
    print("workers:")
    for w in workers:
        state = (
            "gone"
            if w["gone"]
            else "draining"
            if w["draining"]
            else f"heartbeat {w['heartbeat_age']:g} s ago"
        )
        print(
            f"  {w['name']}: {state}; {w['running']} running, {w['queued']} queued,"
            f" {w['contexts']} contexts, {w['leases']} leases"
        )
    print("leases:" if leases else "no controller leased.")
    for lease in leases[:LEASES_SHOWN]:
        left = lease["expires_in"]
        expiry = f"expires in {left:g} s" if left > 0 else "expired"
        print(f"  {npub_encode(lease['controller'])[:24]}… -> {lease['worker']} ({expiry})")
    if len(leases) > LEASES_SHOWN:
        print(f"  … and {len(leases) - LEASES_SHOWN} more")


def _print_recent(entries: list[dict[str, Any]]) -> None:
    import time

    print("recent commands:" if entries else "no commands yet.")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"]))
        duration = f"{e['duration_ms']:.0f} ms" if e.get("duration_ms") is not None else ""
        print(
            f"  {when} {e['controller'][:12]} {e['transport']:5} {e.get('tool') or '?'}"
            f" -> {e['outcome']} {duration}"
        )


# --- keygen --------------------------------------------------------------------------------


def _keygen(path: Path) -> int:
    from ..daemon.keyfile import write_new_key
    from ..nostr.nip19 import Bech32Error, npub_encode

    try:
        pubkey = write_new_key(path)
    except FileExistsError:
        print(f"nostr-browserd: {path} exists; refusing to overwrite a key", file=sys.stderr)
        return EXIT_USAGE
    except (Bech32Error, OSError) as exc:
        print(f"nostr-browserd: cannot write {path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(npub_encode(pubkey))
    print(f"(secret key written to {path}, mode 0600)", file=sys.stderr)
    return EXIT_OK
