"""The model providers' API keys, never at rest in plaintext.

Two backends, asked in order for each provider:

1. a systemd encrypted credential: the unit says ``LoadCredentialEncrypted=<name>:<file>``
   (the file made with ``systemd-creds encrypt``), systemd decrypts it into the service's
   private ``$CREDENTIALS_DIRECTORY`` at start, and the store only reads it there;
2. ``agent-keys.json`` in the state directory (mode 0600): each key NIP-44-encrypted to the
   daemon's own public key through its Signer (``login/sealed.py``, as the vault's entries).
   With a bunker or an n_signer the key can be read only while that signer agrees; a
   read-only identity cannot encrypt, so ``set`` is refused and says why.  There is no
   plaintext fallback.

A key that cannot be decrypted (the file was copied to another machine, or the identity
changed) reads as absent, and ``status`` says so.  Nothing here logs or returns a key except
``get``, whose caller hands it to the provider's SDK and nowhere else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import BrowserdError, ErrorCode
from ..login.sealed import Unreadable, seal, unseal
from ..nostr.signer import Signer

PROVIDERS = ("anthropic", "openai", "openrouter")
KEYS_FILE = "agent-keys.json"
MAX_KEY_LENGTH = 4096


def credential_name(provider: str) -> str:
    """The systemd credential a provider's key is read from: ``anthropic-api-key``."""
    return f"{provider}-api-key"


def check_provider(provider: str) -> str:
    """``provider`` when it is one we know, else ``INVALID_PARAMS`` listing them."""
    if provider not in PROVIDERS:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"Unknown provider {provider!r}: use one of {', '.join(PROVIDERS)}.",
        )
    return provider


class KeyStore:
    """One key per provider: a systemd credential first, else the NIP-44 file."""

    def __init__(
        self, state_dir: Path, signer: Signer | None, credentials_dir: Path | None = None
    ) -> None:
        self.path = state_dir / KEYS_FILE
        self.signer = signer
        if credentials_dir is None and os.environ.get("CREDENTIALS_DIRECTORY"):
            credentials_dir = Path(os.environ["CREDENTIALS_DIRECTORY"])
        self.credentials_dir = credentials_dir

    # --- reading -----------------------------------------------------------------------

    async def get(self, provider: str) -> str | None:
        """The usable key for ``provider``, or None (absent or undecryptable)."""
        key, _ = await self._lookup(check_provider(provider))
        return key

    async def status(self) -> dict[str, str]:
        """For each provider, where its key comes from or why there is none; never the key."""
        return {provider: (await self._lookup(provider))[1] for provider in PROVIDERS}

    async def _lookup(self, provider: str) -> tuple[str | None, str]:
        credential = self._credential(provider)
        if credential:
            return credential, f"set (systemd credential {credential_name(provider)})"
        entry = self._entries().get(provider)
        if entry is None:
            return None, "absent"
        if self.signer is None:
            return None, "stored, but no identity is logged in to decrypt it"
        try:
            opened = await unseal(self.signer, entry)
            if opened.get("provider") != provider or not isinstance(opened.get("key"), str):
                raise Unreadable("the entry belongs to another provider")
        except BrowserdError as exc:
            if exc.code == ErrorCode.SIGNER_ERROR:
                return None, f"stored, but the signer did not decrypt it now: {exc.message}"
            return None, f"stored, but unusable: {exc.message}"
        except Unreadable:
            return None, (
                "absent: a stored key cannot be decrypted by this identity "
                "(copied from elsewhere, or the identity changed); set it again"
            )
        return opened["key"], "set (NIP-44, encrypted to the daemon's own key)"

    def _credential(self, provider: str) -> str | None:
        if self.credentials_dir is None:
            return None
        try:
            value = (self.credentials_dir / credential_name(provider)).read_text().strip()
        except OSError:
            return None
        return value or None

    def _entries(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        keys = data.get("keys") if isinstance(data, dict) else None
        return {k: v for k, v in keys.items() if isinstance(v, dict)} if keys else {}

    # --- writing -----------------------------------------------------------------------

    async def set(self, provider: str, key: str) -> str:
        """Encrypt ``key`` to the daemon's own key and store it; returns what was done."""
        check_provider(provider)
        key = key.strip()
        if not key or len(key) > MAX_KEY_LENGTH or any(c.isspace() for c in key):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "An API key is one word of at most 4096 characters; nothing was stored.",
            )
        instead = (
            "log in with a key, seed, bunker or n_signer, or give the key as the systemd "
            f"credential {credential_name(provider)}."
        )
        sealed = await seal(self.signer, {"provider": provider, "key": key}, instead=instead)
        entries = self._entries()
        entries[provider] = sealed
        self._write(entries)
        note = "stored, NIP-44-encrypted to the daemon's own key"
        if self._credential(provider):
            note += f" (the systemd credential {credential_name(provider)} still wins)"
        return note

    def clear(self, provider: str) -> str:
        """Remove ``provider``'s stored key and leave the others; returns what was done."""
        entries = self._entries()
        removed = entries.pop(check_provider(provider), None) is not None
        if removed:
            self._write(entries)
        note = "removed" if removed else "no stored key"
        if self._credential(provider):
            note += (
                f"; the systemd credential {credential_name(provider)} is read-only: "
                "remove it from the unit"
            )
        return note

    def _write(self, entries: dict[str, Any]) -> None:
        """Replace the file atomically; it is 0600 from its first byte."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump({"version": 1, "keys": entries}, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
