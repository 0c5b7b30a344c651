"""The key tools (``keys_set``, ``keys_status``, ``keys_clear``): the model providers' API
keys in the key store, set over the local channel or by ``nostr-browserd keys``."""

from __future__ import annotations

from typing import Any

from ..agent.keys import KeyStore
from ..errors import BrowserdError, ErrorCode

KEY_TOOLS = frozenset({"keys_set", "keys_status", "keys_clear"})


async def run_key_tool(store: KeyStore, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    """One key tool against ``store``; the result never holds a key."""
    if tool == "keys_status":
        return {"keys": await store.status()}
    provider = params.get("provider")
    if not isinstance(provider, str):
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"{tool} needs provider.")
    if tool == "keys_set":
        key = params.get("api_key")
        done = await store.set(provider, key if isinstance(key, str) else "")
    else:
        done = store.clear(provider)
    return {"provider": provider, "result": done}
