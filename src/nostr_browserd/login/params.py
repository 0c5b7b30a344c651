"""Login parameters: one pydantic model per way in, shared by the config file and the
``login`` / ``switch_identity`` tools, so both take exactly the same path.

Secrets are ``SecretStr`` (their repr is ``'**********'``) and validation errors never
include the input (``hide_input_in_errors``), so a bad call cannot echo a key back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, SecretStr, model_validator

from .nsigner import DEFAULT_SERVICE
from .seed import MAX_ACCOUNT

__all__ = [
    "LOGIN_MODELS",
    "LocalLogin",
    "LoginMethod",
    "LoginParams",
    "Nip46Login",
    "NsignerLogin",
    "ReadOnlyLogin",
    "SeedLogin",
]


class _Login(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True, frozen=True)


def _exactly_one(model: BaseModel, *fields: str) -> None:
    given = [f for f in fields if getattr(model, f) is not None]
    if len(given) != 1:
        raise ValueError(f"give exactly one of {', '.join(fields)}")


class LocalLogin(_Login):
    """A secret key: inline, from an owner-only file, an env variable or a systemd credential."""

    method: Literal["local"]
    nsec: SecretStr | None = Field(None, description="nsec1… or 64 hex characters")
    nsec_file: Path | None = Field(None, description="file holding the key (chmod 600)")
    nsec_env: str | None = Field(None, description="environment variable holding the key")
    credential: str | None = Field(None, description="systemd credential name holding the key")

    @model_validator(mode="after")
    def _one_source(self) -> LocalLogin:
        _exactly_one(self, "nsec", "nsec_file", "nsec_env", "credential")
        return self


class SeedLogin(_Login):
    """A BIP-39 mnemonic (NIP-06), inline or from an owner-only file."""

    method: Literal["seed"]
    mnemonic: SecretStr | None = Field(None, description="12 or 24 BIP-39 words")
    seed_file: Path | None = Field(None, description="file holding the mnemonic (chmod 600)")
    passphrase: SecretStr | None = Field(None, description="optional BIP-39 passphrase")
    passphrase_file: Path | None = Field(None, description="file holding the passphrase")
    account: int = Field(0, ge=0, le=MAX_ACCOUNT, description="NIP-06 account index")

    @model_validator(mode="after")
    def _one_source(self) -> SeedLogin:
        _exactly_one(self, "mnemonic", "seed_file")
        if self.passphrase is not None and self.passphrase_file is not None:
            raise ValueError("give passphrase or passphrase_file, not both")
        return self


class ReadOnlyLogin(_Login):
    """A public key only: status works, signing and direct messages do not."""

    method: Literal["readonly"]
    npub: str = Field(description="npub1… or 64 hex characters")


class Nip46Login(_Login):
    """A NIP-46 remote signer: a ``bunker://`` URL, or a ``nostrconnect://`` wait on relays."""

    method: Literal["nip46"]
    bunker_url: SecretStr | None = Field(None, description="bunker://<pubkey>?relay=…&secret=…")
    bunker_url_file: Path | None = Field(None, description="file holding the bunker:// URL")
    nostrconnect_relays: list[str] | None = Field(
        None, description="print a nostrconnect:// URI and wait on these relays for a signer"
    )
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds to wait per request")

    @model_validator(mode="after")
    def _one_source(self) -> Nip46Login:
        _exactly_one(self, "bunker_url", "bunker_url_file", "nostrconnect_relays")
        return self


class NsignerLogin(_Login):
    """An n_signer in another qube, reached with ``qrexec-client-vm``.

    The program run is configuration (``[identity.nsigner] binary``), never a parameter: a
    login call must not be able to name a program for the daemon to run.
    """

    method: Literal["nsigner"]
    transport: Literal["qrexec"] = "qrexec"
    device: str = Field(description="the signer's qube (qrexec target)")
    service: str = Field(DEFAULT_SERVICE, description="the qrexec service name")
    index: int = Field(0, ge=0, description="key slot on the signer")
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds to wait per request")


LOGIN_MODELS: dict[str, type[BaseModel]] = {
    "local": LocalLogin,
    "seed": SeedLogin,
    "readonly": ReadOnlyLogin,
    "nip46": Nip46Login,
    "nsigner": NsignerLogin,
}

LoginMethod = Annotated[
    LocalLogin | SeedLogin | ReadOnlyLogin | Nip46Login | NsignerLogin,
    Field(discriminator="method"),
]


class LoginParams(RootModel[LoginMethod]):
    """Params of ``login`` and ``switch_identity``: ``{"method": …, …}``."""

    model_config = ConfigDict(hide_input_in_errors=True)
