"""``nostr-browserd run``: Playwright's driver starts first, everything else beside it.

The driver (a Node process, its compiled code cached: ``keep_node_cache``) takes about as
long to start as the config and the daemon take to import and load, and needs neither.  So
``run`` starts it before it reads the config, loads the config in a thread meanwhile,
launches Chromium on the driver once the config says how (no launch when the browsers are
servers elsewhere), and imports the daemon in a thread while Chromium launches.  Each step
shows in the start's timeline (``daemon.timeline``).  This module and ``cli.main`` import no
more than starting the driver needs (tests/unit/daemon/test_start_imports.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import Playwright, async_playwright

from ..daemon.timeline import Timeline

if TYPE_CHECKING:
    from ..daemon.config import Config


async def serve(path: Path | None, verbose: bool) -> int:
    """Start the daemon of the config at ``path`` (none: the local default setup), serve
    until it is stopped; its exit code.

    Every file the daemon, its driver and its Chromium make is their owner's alone (the
    unit's ``UMask=0077``, wherever it runs); the state directory's own files are 0600
    by their own modes too, for a daemon run in-process.
    """
    os.umask(0o077)
    timeline = Timeline()
    keep_node_cache()
    driver = asyncio.ensure_future(timeline.timed("driver", async_playwright().start()))
    try:
        with timeline.step("config"):
            config = await asyncio.to_thread(_configured, path, verbose)
    except BaseException:
        await stop_driver(driver)
        raise
    from ..browser.endpoints import launch_early

    early = asyncio.ensure_future(timeline.timed("launch", launch_early(driver, config.browser)))
    try:
        with timeline.step("daemon imports"):
            app = await asyncio.to_thread(importlib.import_module, "nostr_browserd.daemon.app")
    except BaseException:
        early.cancel()
        raise
    from .banner import banner

    daemon = app.Daemon(config, path, early=early, timeline=timeline)
    return int(await daemon.run(on_ready=lambda: print(banner(daemon), flush=True)))


def _configured(path: Path | None, verbose: bool) -> Config:
    """The config at ``path``, and the log set up: the start's work that waits for no driver."""
    from ..daemon.config import load_config

    config = load_config(path)
    _setup_logging(verbose)
    return config


def keep_node_cache() -> None:
    """Let Playwright's driver keep Node's compile cache (the V8 code of its modules) in the
    user's cache directory, as Python keeps its bytecode: the driver's start, the longest
    step of ours, takes about a sixth less from the second start on.  An operator's
    ``NODE_COMPILE_CACHE`` (or ``NODE_DISABLE_COMPILE_CACHE``) wins; Node goes without a
    cache it cannot write."""
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home directory to speak of
        return
    os.environ.setdefault("NODE_COMPILE_CACHE", str(Path(base) / "nostr-browserd" / "node"))


async def stop_driver(driver: asyncio.Future[Playwright]) -> None:
    """Stop the driver of a daemon that will not start (a bad config, Ctrl-C)."""
    with contextlib.suppress(Exception):
        await (await driver).stop()


def _setup_logging(verbose: bool) -> None:
    """Log to stderr, with timestamps unless the journal adds its own (under systemd)."""
    fmt = "%(levelname)s %(name)s: %(message)s"
    if "JOURNAL_STREAM" not in os.environ:
        fmt = "%(asctime)s " + fmt
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=fmt)
    for noisy in ("websockets", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
