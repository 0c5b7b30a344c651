"""The current identity: which Signer the daemon uses, and how it got it.

The config file and the ``login`` / ``switch_identity`` / ``logout`` / ``login_status``
tools all come through here with the same :class:`LoginParams`, so both paths fail and
succeed alike.  Nothing here logs or returns a secret: results carry the method, the
public key and whether the identity can sign.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr, ValidationError

from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import npub_encode
from ..nostr.signer import Signer
from .files import read_private_file
from .nsec import signer_from_credential, signer_from_env, signer_from_file, signer_from_nsec
from .nsigner import DEFAULT_BINARY, NsignerSigner
from .params import (
    LocalLogin,
    LoginMethod,
    LoginParams,
    Nip46Login,
    NsignerLogin,
    ReadOnlyLogin,
    SeedLogin,
)
from .readonly import READ_ONLY_MESSAGE, ReadOnlySigner
from .seed import signer_from_mnemonic, signer_from_seed_file

__all__ = ["IdentityManager", "LoginParams", "open_signer"]

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]
WHERE_THE_KEY_IS = ("relays", "connected", "device", "service", "index")


def _show_to_operator(text: str) -> None:
    """Default for text meant for the operator's eyes only (not the log)."""
    print(text, file=sys.stderr, flush=True)


def _secret(value: SecretStr | None) -> str:
    return "" if value is None else value.get_secret_value()


async def open_signer(
    params: LoginMethod,
    *,
    on_auth_url: Callable[[str], None] | None = None,
    show_uri: Callable[[str], None] = _show_to_operator,
    nsigner_binary: str = DEFAULT_BINARY,
) -> Signer:
    """Build the Signer ``params`` describe and make sure it answers ``public_key``.

    ``nsigner_binary`` is the qrexec client an n_signer login runs: configuration only.
    """
    signer: Signer
    if isinstance(params, LocalLogin):
        if params.nsec is not None:
            signer = signer_from_nsec(_secret(params.nsec))
        elif params.nsec_file is not None:
            signer = signer_from_file(params.nsec_file)
        elif params.nsec_env is not None:
            signer = signer_from_env(params.nsec_env)
        else:
            assert params.credential is not None
            signer = signer_from_credential(params.credential)
    elif isinstance(params, SeedLogin):
        if params.seed_file is not None:
            signer = signer_from_seed_file(
                params.seed_file,
                _secret(params.passphrase),
                params.account,
                passphrase_file=params.passphrase_file,
            )
        else:
            passphrase = _secret(params.passphrase)
            if params.passphrase_file is not None:
                passphrase = read_private_file(params.passphrase_file, strip=False)
            signer = signer_from_mnemonic(_secret(params.mnemonic), passphrase, params.account)
    elif isinstance(params, ReadOnlyLogin):
        signer = ReadOnlySigner(params.npub)
    elif isinstance(params, Nip46Login):
        # The bunker client pulls in the relay pool: load it only when it is used.
        from .bunker import BunkerSigner

        if params.nostrconnect_relays is not None:
            signer = await BunkerSigner.from_nostrconnect(
                params.nostrconnect_relays,
                timeout=params.timeout,
                on_auth_url=on_auth_url,
                show_uri=show_uri,
            )
        else:
            url = _secret(params.bunker_url) or read_private_file(params.bunker_url_file or "")
            signer = await BunkerSigner.connect(
                url, timeout=params.timeout, on_auth_url=on_auth_url
            )
    else:
        assert isinstance(params, NsignerLogin)
        signer = NsignerSigner(
            params.device,
            params.service,
            params.index,
            binary=nsigner_binary,
            timeout=params.timeout,
        )
    try:
        await signer.public_key()
    except BaseException:
        await _close(signer)
        raise
    return signer


async def _close(signer: Signer | None) -> None:
    aclose = getattr(signer, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:  # closing must not stop a logout or a switch
            log.warning("closing the previous signer failed", exc_info=True)


def _as_method(params: LoginParams | LoginMethod | dict[str, Any]) -> LoginMethod:
    if isinstance(params, LoginParams):
        return params.root
    if not isinstance(params, dict):
        return params
    try:
        return LoginParams.model_validate(params).root
    except ValidationError as exc:
        # Never echo the input: it may hold a key, a seed or a bunker secret.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        )
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"invalid login params: {problems}") from None


class IdentityManager:
    """Holds the current :class:`Signer` and its login method; switches atomically."""

    def __init__(
        self,
        *,
        show_uri: Callable[[str], None] = _show_to_operator,
        nsigner_binary: str = DEFAULT_BINARY,
    ) -> None:
        """``show_uri`` shows a ``nostrconnect://`` URI to the operator (default: stderr);
        ``nsigner_binary`` is the configured qrexec client (never a login parameter)."""
        self._nsigner_binary = nsigner_binary
        self._signer: Signer | None = None
        self._method: str | None = None
        self._pubkey: str | None = None
        self._opening: str | None = None  # the method of a login in progress
        self._auth_url: str | None = None  # an approval that login is waiting for
        self._show_uri = show_uri
        self._lock = asyncio.Lock()
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(status)`` after every login, switch and logout."""
        self._listeners.append(listener)

    @property
    def logged_in(self) -> bool:
        return self._signer is not None

    @property
    def signer(self) -> Signer:
        """The current signer, or ``NOT_LOGGED_IN``."""
        if self._signer is None:
            raise BrowserdError(
                ErrorCode.NOT_LOGGED_IN, "not logged in: call login first (see login_status)"
            )
        return self._signer

    @property
    def readonly(self) -> bool:
        return isinstance(self._signer, ReadOnlySigner)

    def _on_auth_url(self, url: str) -> None:
        # An auth_url is meant to be shown: log it, and status shows it while login waits
        # (after login the bunker signer's own describe() shows pending ones).
        self._auth_url = url
        log.warning("the remote signer asks for approval: open %s", url)

    async def login(self, params: LoginParams | LoginMethod | dict[str, Any]) -> dict[str, Any]:
        """Log in; refused if already logged in (use :meth:`switch_identity`)."""
        async with self._lock:
            if self._signer is not None:
                raise BrowserdError(
                    ErrorCode.REFUSED,
                    f"already logged in as {npub_encode(self._pubkey or '')}: use "
                    "switch_identity to change identity, or logout first",
                )
            return await self._install(_as_method(params))

    async def switch_identity(
        self, params: LoginParams | LoginMethod | dict[str, Any]
    ) -> dict[str, Any]:
        """Log in with ``params``; only once that worked is the old signer closed."""
        async with self._lock:
            return await self._install(_as_method(params))

    async def _install(self, params: LoginMethod) -> dict[str, Any]:
        self._opening, self._auth_url = params.method, None
        try:
            signer = await open_signer(
                params,
                on_auth_url=self._on_auth_url,
                show_uri=self._show_uri,
                nsigner_binary=self._nsigner_binary,
            )
        finally:
            self._opening = self._auth_url = None
        old, self._signer = self._signer, signer
        self._method, self._pubkey = params.method, await signer.public_key()
        await _close(old)
        log.info("logged in: method=%s npub=%s", self._method, npub_encode(self._pubkey))
        self._notify()
        return self.identity()

    async def logout(self) -> dict[str, Any]:
        """Forget the signer (closing a bunker or qrexec session); harmless when logged out."""
        async with self._lock:
            old, self._signer = self._signer, None
            self._method = self._pubkey = None
            if old is not None:
                await _close(old)
                log.info("logged out")
                self._notify()
            return self.status()

    def identity(self) -> dict[str, Any]:
        """The ``login`` result: method, pubkey, npub, readonly, and where the key is.

        A bunker adds its ``relays`` and whether it is ``connected``; an n_signer its
        ``device``, ``service`` and ``index``.  Never a secret (no bunker secret, no nsec).
        """
        if self._signer is None or self._pubkey is None:
            raise BrowserdError(ErrorCode.NOT_LOGGED_IN, "not logged in")
        identity: dict[str, Any] = {
            "method": self._method,
            "pubkey": self._pubkey,
            "npub": npub_encode(self._pubkey),
            "readonly": self.readonly,
        }
        describe = getattr(self._signer, "describe", None)
        described = describe() if describe is not None else {}
        identity.update({k: described[k] for k in WHERE_THE_KEY_IS if k in described})
        return identity

    def status(self) -> dict[str, Any]:
        """What ``login_status`` shows: identity, capabilities, pending approvals."""
        status: dict[str, Any] = {"logged_in": self._signer is not None}
        if self._signer is not None:
            status.update(self.identity())
            status["can_sign"] = not self.readonly
            if self.readonly:
                status["notice"] = READ_ONLY_MESSAGE
            describe = getattr(self._signer, "describe", None)
            if describe is not None:
                status["signer"] = describe()
        if self._opening is not None:
            status["login_in_progress"] = {"method": self._opening, "auth_url": self._auth_url}
        return status

    def _notify(self) -> None:
        status = self.status()
        for listener in self._listeners:
            try:
                listener(status)
            except Exception:
                log.exception("an identity listener failed")
