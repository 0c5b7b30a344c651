"""``nostr-browserd bunker``: serve a key to NIP-46 clients (``login/bunker_server.py``)
from the command line: which key, which relays, what paired clients may do."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import BrowserdError
from ..login.bunker_server import ALL_PERMS, DAEMON_PERMS, print_url, serve_bunker
from ..login.files import read_private_file
from ..login.manager import open_signer
from ..login.params import LocalLogin, SeedLogin
from ..nostr import nip46
from ..nostr.signer import KeySigner
from .options import parsed


@dataclass(frozen=True)
class BunkerOptions:
    """``bunker``'s options: the key (one of four sources), the relays, the pairing."""

    relay: list[str]
    nsec_file: Path | None
    nsec_env: str | None
    credential: str | None
    seed_file: Path | None
    passphrase_file: Path | None
    account: int
    secret_file: str | None
    reusable_secret: bool
    url_file: Path | None
    perms: str
    policy: Literal["auto", "prompt"]
    nostrconnect: str | None
    separate_transport_key: bool


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nostr-browserd bunker",
        description="Serve a Nostr key to NIP-46 clients (e.g. a nostr-browserd elsewhere).",
    )
    p.add_argument("--relay", action="append", required=True, help="ws(s):// URL (repeat)")
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--nsec-file", type=Path, help="file with the nsec1… or hex key (chmod 600)")
    key.add_argument("--nsec-env", help="environment variable holding the key")
    key.add_argument("--credential", help="systemd credential holding the key")
    key.add_argument("--seed-file", type=Path, help="file with a BIP-39 mnemonic (chmod 600)")
    p.add_argument("--passphrase-file", type=Path, help="file with the BIP-39 passphrase")
    p.add_argument("--account", type=int, default=0, help="NIP-06 account (default 0)")
    p.add_argument("--secret-file", help="file with the pairing secret (default: random)")
    p.add_argument(
        "--reusable-secret",
        action="store_true",
        help="the secret pairs every client that shows it, not only the first (workers "
        "sharing one bunker URL; give --secret-file so that it survives a restart)",
    )
    p.add_argument(
        "--url-file",
        type=Path,
        help="write the bunker:// URL to this file (0600) once serving, not to stdout",
    )
    p.add_argument(
        "--perms",
        default=nip46.format_perms(DAEMON_PERMS),
        help="what paired clients may do, e.g. sign_event:1,14,nip44_decrypt, or 'all' "
        "(default: what nostr-browserd needs: " + nip46.format_perms(DAEMON_PERMS) + ")",
    )
    p.add_argument(
        "--policy",
        choices=("auto", "prompt"),
        default="auto",
        help="outside --perms: refuse (auto) or ask on this terminal (prompt)",
    )
    p.add_argument("--nostrconnect", help="pair with the client that shows this URI")
    p.add_argument(
        "--separate-transport-key",
        action="store_true",
        help="talk NIP-46 with a fresh key instead of the served key (URL changes each run)",
    )
    return p


def _key_params(args: BunkerOptions) -> LocalLogin | SeedLogin:
    if args.seed_file:
        return SeedLogin(
            method="seed",
            seed_file=args.seed_file,
            passphrase_file=args.passphrase_file,
            account=args.account,
        )
    return LocalLogin(
        method="local",
        nsec_file=args.nsec_file,
        nsec_env=args.nsec_env,
        credential=args.credential,
    )


async def _run(args: BunkerOptions) -> None:
    signer = await open_signer(_key_params(args))

    def ready(url: str) -> None:
        if args.url_file is None:
            print_url(url)
        else:  # where stdout is a log (a container's), the secret stays in the file
            _write_url_file(args.url_file, url)
            print_url(f"the bunker:// URL is in {args.url_file}")

    serving = asyncio.ensure_future(
        serve_bunker(
            signer,
            args.relay,
            secret=read_private_file(args.secret_file) if args.secret_file else None,
            policy=args.policy,
            perms=ALL_PERMS if args.perms == "all" else nip46.parse_perms(args.perms),
            transport=KeySigner.generate() if args.separate_transport_key else None,
            nostrconnect=args.nostrconnect,
            reusable_secret=args.reusable_secret,
            on_ready=ready,
        )
    )
    # SIGTERM (systemd) and SIGINT stop it cleanly, SIGINT too where it was ignored from the
    # start (a shell's background job): the relays are closed either way.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving


def main(argv: list[str]) -> int:
    """Entry point of ``nostr-browserd bunker``; prints the bunker:// URL on stdout."""
    args = parsed(BunkerOptions, _parser().parse_args(argv))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 0
    except BrowserdError as exc:
        print(f"nostr-browserd bunker: {exc.message}", file=sys.stderr)
        return 1
    except nip46.Nip46Error as exc:
        print(f"nostr-browserd bunker: {exc}", file=sys.stderr)
        return 2
    return 0


def _write_url_file(path: Path, url: str) -> None:
    """Put ``url`` in ``path`` (0600, replaced whole) for clients that read it from a file.

    Written beside and renamed over, so a client never reads half a URL.
    """
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(url + "\n")
    os.replace(partial, path)
