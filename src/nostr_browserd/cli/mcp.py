"""``nostr-browserd mcp``: an MCP server for agent hosts, local or in front of a remote daemon.

nostr-browserd mcp --local [--config FILE]
nostr-browserd mcp --to NPUB --key FILE [--relay URL …] [--transport auto|contextvm|dm]
    … [--caps FAMILY,…] [--tools NAME,…] [--http 127.0.0.1:PORT]
nostr-browserd mcp --print-config HOST [the options the host should start it with]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..daemon.config_error import ConfigError
from .options import McpOptions, parsed

if TYPE_CHECKING:  # the MCP SDK and pydantic take most of a second: imported where used
    from types import ModuleType

    from ..daemon.config import Config
    from ..mcp.backend import Backend
    from ..mcp.local import LocalBackend
    from ..mcp.plain import PlainMcp
    from ..mcp.server import BrowserMcp
    from ..mcpshape.selection import Selection

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    """The ``mcp`` subcommand's options (also what ``--print-config`` repeats to a host)."""
    p = argparse.ArgumentParser(
        prog="nostr-browserd mcp",
        description="Serve every browser tool to an MCP host (Claude, Cursor, VS Code, Roo Code).",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--local", action="store_true", help="run the browser in this process")
    mode.add_argument("--to", metavar="NPUB", help="drive the daemon with this npub over Nostr")
    p.add_argument("--config", type=Path, help="--local: the daemon's TOML config (browser keys)")
    p.add_argument("--key", type=Path, help="--to: the agent's key file (nsec, mode 0600)")
    p.add_argument(
        "--relay",
        action="append",
        default=[],
        help="--to: relay URL, repeatable "
        "(default: the daemon's kind 10050/10002 relays, looked up on --discovery)",
    )
    p.add_argument(
        "--discovery",
        action="append",
        default=[],
        help="--to: where to look the daemon's "
        "relays up, repeatable (default: a few public indexers)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="--to: seconds to wait for a reply beyond any approval wait (default 60)",
    )
    p.add_argument(
        "--transport",
        choices=("auto", "contextvm", "dm"),
        default="auto",
        help="--to: ContextVM (MCP over Nostr) or our DM envelope; auto (default) uses"
        " ContextVM when the daemon answers it",
    )
    p.add_argument("--caps", action="append", default=[], help="list only these tool families")
    p.add_argument("--tools", action="append", default=[], help="list only these tools")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP on this loopback address instead of stdio",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="--http: the bearer token (created, 0600, when missing; default: in the state dir)",
    )
    p.add_argument("--print-config", metavar="HOST", help="print a host's configuration and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging (to stderr)")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``nostr-browserd mcp``; returns the exit code."""
    p = parser()
    args = parsed(McpOptions, p.parse_args(argv))
    if args.to and not args.key:
        p.error("--to needs --key: the agent's own key file (nostr-browserd keygen agent.nsec)")
    if args.print_config:
        from .hosts import print_config

        return print_config(args, p)
    if not args.local and not args.to:
        p.error("give --local (browser in this process) or --to NPUB --key FILE (a remote daemon)")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.local and not args.http:
            asyncio.run(_local_stdio(args))
            return EXIT_OK
        from ..mcpshape.selection import Selection

        selection = Selection.parse(args.caps, args.tools)
        backend = _backend(args)
        from ..mcp.server import BrowserMcp

        server = BrowserMcp(backend, selection)
        if args.http:
            from ..mcp.http import serve_http

            return asyncio.run(serve_http(server, args.http, args.token_file, _state_dir(args)))
        asyncio.run(server.run_stdio())
        return EXIT_OK
    except (ConfigError, ValueError) as exc:
        print(f"nostr-browserd mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK


async def _local_stdio(args: McpOptions) -> None:
    """``mcp --local`` on stdio, started as ``run`` starts (``cli.run``): Playwright's driver
    first, the config and the tool selection read in a thread meanwhile, Chromium launched as
    soon as the config says how.  The store and the browser open in the background; on pipes
    the session needs no MCP SDK (``mcp.plain``: its server side was 0.3 s of CPU, the GIL
    held, while Chromium started), and the host's ``initialize`` and ``tools/list`` are
    answered before the browser is up (``mcp.local``).  A host starts this once per session
    and waits for it."""
    from playwright.async_api import async_playwright

    from ..browser.endpoints import launch_early
    from .run import keep_node_cache, stop_driver

    keep_node_cache()
    driver = asyncio.ensure_future(async_playwright().start())
    try:
        config, selection = await asyncio.to_thread(_local_settings, args)
    except BaseException:
        await stop_driver(driver)
        raise
    early = asyncio.ensure_future(launch_early(driver, config.browser))
    try:
        local = await asyncio.to_thread(_local_module, selection)
    except BaseException:
        early.cancel()
        raise
    backend = local.LocalBackend(config, early=early)
    await backend.start()
    try:
        mcp = await _local_server(backend, selection)
    except BaseException:
        await backend.close()
        raise
    await mcp.run_stdio()


async def _local_server(backend: LocalBackend, selection: Selection) -> PlainMcp | BrowserMcp:
    """On pipes (how every host starts us): our own session, which needs no MCP SDK
    (``mcp.plain``).  A terminal or a file: the SDK's server, its fronts put off."""
    from ..mcp.pipes import piped

    if piped():
        from ..mcp.plain import PlainMcp

        return PlainMcp(backend, selection)
    from ..mcp.sdk_fronts import server_side

    server = await asyncio.to_thread(server_side, "..mcp.server", __package__)
    return server.BrowserMcp(backend, selection)  # type: ignore[no-any-return]


def _local_settings(args: McpOptions) -> tuple[Config, Selection]:
    """``--config`` loaded and ``--caps``/``--tools`` parsed: what waits for no driver."""
    from ..daemon.config import load_config
    from ..mcpshape.selection import Selection

    return load_config(args.config), Selection.parse(args.caps, args.tools)


def _local_module(selection: Selection) -> ModuleType:
    """``mcp.local``, once ``--caps``/``--tools`` name only tools there are: a typo is refused
    before the state directory or the store is touched."""
    from ..catalog import REGISTRY

    selection.check(REGISTRY)
    return importlib.import_module("..mcp.local", __package__)


def _backend(args: McpOptions) -> Backend:
    if args.local:
        from ..daemon.config import load_config
        from ..mcp.local import LocalBackend

        return LocalBackend(load_config(args.config))
    return _remote(args)


def _remote(args: McpOptions) -> Backend:
    """From ``--to``, ``--key``, ``--relay``, ``--discovery`` and ``--timeout``."""
    from ..errors import BrowserdError
    from ..login.nsec import signer_from_file
    from ..mcp.contextvm_remote import AutoBackend, ContextVmBackend
    from ..mcp.remote import RemoteBackend
    from ..nostr.nip19 import parse_pubkey

    assert args.to is not None and args.key is not None  # main() checked
    try:
        daemon = parse_pubkey(args.to)
    except ValueError as exc:
        raise ValueError(f"--to: {exc}") from None
    try:
        signer = signer_from_file(args.key)
    except BrowserdError as exc:
        raise ValueError(f"--key: {exc.message}") from None
    relays, discovery, timeout = args.relay or None, args.discovery, args.timeout
    dm = RemoteBackend(signer, daemon, relays, discovery=discovery, timeout=timeout)
    if args.transport == "dm":
        return dm
    cvm = ContextVmBackend(signer, daemon, relays, discovery=discovery, timeout=timeout)
    return cvm if args.transport == "contextvm" else AutoBackend(cvm, dm)


def _state_dir(args: McpOptions) -> Path:
    from ..daemon.config import load_config

    return load_config(args.config).state.dir
