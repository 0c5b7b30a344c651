"""``nostr-browserd keys set|status|clear``: the model providers' API keys, from a shell.

When the daemon is running, the command goes to it over the local channel (``keys_set``,
``keys_status``, ``keys_clear``), so the key is encrypted by the signer the daemon already
holds: a bunker or an n_signer is asked once, by the running daemon.  When nothing answers,
the command logs in with the configured identity itself.  ``set`` reads the key from stdin,
never from argv, where any user could read it in the process list.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from ..agent.keys import KeyStore
from ..daemon.app import login_params
from ..daemon.config import Config
from ..daemon.key_tools import run_key_tool
from ..daemon.local_ws import load_token
from ..errors import BrowserdError, ErrorCode
from ..login.manager import IdentityManager
from ..nostr.signer import Signer

T = TypeVar("T")


def read_key(stream: Any = None) -> str:
    """The key from stdin (a terminal gets a prompt without echo)."""
    stream = stream or sys.stdin
    if stream.isatty():
        import getpass

        return getpass.getpass("API key (not shown): ")
    key: str = stream.read()
    return key


async def keys_command(config: Config, action: str, provider: str | None) -> int:
    """Run ``keys ACTION [PROVIDER]``; prints the outcome; returns the exit code."""
    tool = f"keys_{action}"
    params: dict[str, Any] = {"provider": provider} if provider else {}
    if action == "set":
        params["api_key"] = read_key()
    try:
        data = await through_daemon(config, tool, params)
        if data is None:
            data = await by_ourselves(
                config,
                lambda signer: run_key_tool(KeyStore(config.state.dir, signer), tool, params),
            )
    except BrowserdError as exc:
        print(f"nostr-browserd: {exc.message}", file=sys.stderr)
        return 1
    if "keys" in data:
        for name, state in data["keys"].items():
            print(f"{name}: {state}")
    else:
        print(f"{data['provider']}: {data['result']}")
    return 0


async def through_daemon(config: Config, tool: str, params: dict[str, Any]) -> Any:
    """The running daemon's answer over the local channel, or None when none is running
    (``keys`` and ``vault`` alike: the daemon's own signer is asked, once)."""
    if not config.local.enabled:
        return None
    try:
        token = load_token(config.local.token_path(config.state.dir), generate=False)
    except BrowserdError:
        token = None  # not readable by this user: a running daemon refuses, and we say so
    headers = {"Authorization": f"Bearer {token}"} if token else None
    request_id = secrets.token_hex(4)
    try:
        async with (
            asyncio.timeout(30),
            connect(f"ws://127.0.0.1:{config.local.port}/agent", additional_headers=headers) as ws,
        ):
            await ws.send(json.dumps({"id": request_id, "tool": tool, "params": params}))
            async for raw in ws:
                answer = json.loads(raw)
                if answer.get("id") == request_id:
                    break
    except InvalidStatus as exc:
        raise BrowserdError(
            ErrorCode.FORBIDDEN,
            f"the daemon on 127.0.0.1:{config.local.port} refused the local channel "
            f"({exc.response.status_code}): run this with the daemon's config, as a user who "
            "can read its local token",
        ) from None
    except (OSError, TimeoutError):
        return None
    if not answer.get("success"):
        error = answer.get("error") or {}
        raise BrowserdError(error.get("code", "INTERNAL"), error.get("message", "failed"))
    return answer["data"]


async def by_ourselves(config: Config, work: Callable[[Signer], Awaitable[T]]) -> T:
    """``work(signer)`` with the configured identity logged in here, when no daemon runs."""
    login = login_params(config.identity, config.state.dir)
    if login is None:
        raise BrowserdError(
            ErrorCode.NOT_LOGGED_IN,
            "the config names no identity ([identity] method none): start the daemon, log it"
            " in with login on the local channel, and run this again",
        )
    identity = IdentityManager()
    await identity.login(login)
    try:
        return await work(identity.signer)
    finally:
        await identity.logout()
