"""IdentityManager and LoginParams: one path for the config file and the login tools."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.manager import IdentityManager, LoginParams
from nostr_browserd.login.params import LocalLogin, NsignerLogin, SeedLogin
from tests.fixtures.signers import (  # noqa: F401
    NIP06,
    STANDIN_DIR,
    private_file,
    qrexec_standin_fixture,
)

A, B = NIP06


async def test_login_status_logout_cycle() -> None:
    manager = IdentityManager()
    seen: list[dict] = []
    manager.add_listener(seen.append)
    assert manager.status() == {"logged_in": False}
    with pytest.raises(BrowserdError) as err:
        manager.signer  # noqa: B018
    assert err.value.code is ErrorCode.NOT_LOGGED_IN

    result = await manager.login({"method": "local", "nsec": A["nsec"]})
    assert result == {
        "method": "local",
        "pubkey": A["public_key"],
        "npub": A["npub"],
        "readonly": False,
    }
    status = manager.status()
    assert status["logged_in"] and status["can_sign"] and status["npub"] == A["npub"]
    assert await manager.signer.public_key() == A["public_key"]

    with pytest.raises(BrowserdError) as err:
        await manager.login({"method": "readonly", "npub": B["npub"]})
    assert err.value.code is ErrorCode.REFUSED and "switch_identity" in err.value.message

    assert (await manager.logout()) == {"logged_in": False}
    assert (await manager.logout()) == {"logged_in": False}
    assert [s["logged_in"] for s in seen] == [True, False]


async def test_switch_identity_keeps_the_old_one_when_the_new_one_fails(tmp_path) -> None:
    manager = IdentityManager()
    await manager.login(LoginParams.model_validate({"method": "seed", "mnemonic": A["mnemonic"]}))
    bad = private_file(tmp_path, "key", B["nsec"], 0o644)
    with pytest.raises(BrowserdError, match="chmod 600"):
        await manager.switch_identity({"method": "local", "nsec_file": str(bad)})
    assert manager.status()["pubkey"] == A["public_key"]
    bad.chmod(0o600)
    result = await manager.switch_identity({"method": "local", "nsec_file": str(bad)})
    assert result["pubkey"] == B["public_key"] and manager.status()["method"] == "local"


async def test_readonly_status_says_it_cannot_answer_messages() -> None:
    manager = IdentityManager()
    result = await manager.login({"method": "readonly", "npub": B["npub"]})
    assert result["readonly"] is True
    status = manager.status()
    assert status["can_sign"] is False and "direct messages" in status["notice"]
    with pytest.raises(BrowserdError) as err:
        await manager.signer.sign_event({"kind": 1, "content": "x"})
    assert err.value.code is ErrorCode.READ_ONLY_IDENTITY


async def test_every_local_source_goes_through_login(tmp_path, monkeypatch) -> None:
    key = private_file(tmp_path, "key", A["private_key"])
    seed = private_file(tmp_path, "seed", B["mnemonic"])
    monkeypatch.setenv("TEST_KEY_ENV", A["nsec"])
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    cases = [
        ({"method": "local", "nsec_file": str(key)}, A),
        ({"method": "local", "nsec_env": "TEST_KEY_ENV"}, A),
        ({"method": "local", "credential": "key"}, A),
        ({"method": "seed", "seed_file": str(seed)}, B),
    ]
    manager = IdentityManager()
    for params, expected in cases:
        assert (await manager.switch_identity(params))["pubkey"] == expected["public_key"]


async def test_nsigner_login_and_refusal(qrexec_standin) -> None:
    manager = IdentityManager()
    params = {
        "method": "nsigner",
        "transport": "qrexec",
        "device": "nostr_signer",
        "service": "qubes.NsignerRpc",
        "index": 0,
    }
    logged = await manager.login(params)
    assert logged["pubkey"] == A["public_key"]
    where = {"device": "nostr_signer", "service": "qubes.NsignerRpc", "index": 0}
    assert logged.items() >= where.items(), "login_status says where the key is"
    assert manager.status()["method"] == "nsigner"
    assert manager.status()["signer"] == {
        "transport": "qrexec",
        "device": "nostr_signer",
        "service": "qubes.NsignerRpc",
        "index": 0,
    }
    await manager.logout()
    qrexec_standin("refuse")
    with pytest.raises(BrowserdError) as err:
        await manager.login(params)
    assert err.value.code is ErrorCode.REFUSED
    assert manager.status() == {"logged_in": False}


async def test_the_nsigner_program_is_configuration_not_a_login_param(
    qrexec_standin, monkeypatch, tmp_path
) -> None:
    """A login call cannot name a program for the daemon to run; the operator's config can."""
    ran = tmp_path / "ran"
    evil = private_file(tmp_path, "evil", f"#!/bin/sh\ntouch {ran}\n", 0o700)
    with pytest.raises(BrowserdError) as err:
        await IdentityManager().login({"method": "nsigner", "device": "q", "binary": str(evil)})
    assert err.value.code is ErrorCode.INVALID_PARAMS and "binary" in err.value.message
    assert not ran.exists()
    monkeypatch.setenv("PATH", "/nonexistent")  # only the configured path can be found
    manager = IdentityManager(nsigner_binary=str(STANDIN_DIR / "qrexec-client-vm"))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # the stand-in's python3
    result = await manager.login({"method": "nsigner", "device": "nostr_signer"})
    assert result["pubkey"] == A["public_key"]
    await manager.logout()


@pytest.mark.parametrize(
    "params",
    [
        {"method": "local"},
        {"method": "local", "nsec": A["nsec"], "nsec_env": "X"},
        {"method": "local", "nsec": A["nsec"], "bogus": 1},
        {"method": "seed", "mnemonic": A["mnemonic"], "passphrase": "p", "passphrase_file": "f"},
        {"method": "seed", "mnemonic": A["mnemonic"], "account": -1},
        {"method": "nip46"},
        {"method": "nsigner", "device": "q", "transport": "usb"},
        {"method": "nsigner", "device": "-m", "service": "http.server", "binary": "/bin/sh"},
        {"method": "telepathy", "nsec": A["nsec"]},
        {"nsec": A["nsec"]},
    ],
)
def test_bad_params_are_refused_without_echoing_secrets(params) -> None:
    with pytest.raises(ValidationError) as err:
        LoginParams.model_validate(params)
    # str() is what a log shows; errors(include_input=False) is what the tool registry reports.
    text = str(err.value) + repr(err.value.errors(include_input=False))
    assert A["nsec"] not in text and A["mnemonic"].split()[3] not in text


def test_secrets_are_hidden_in_reprs() -> None:
    local = LoginParams.model_validate({"method": "local", "nsec": A["nsec"]})
    seed = SeedLogin(method="seed", mnemonic=A["mnemonic"], passphrase="pass-phrase-x")
    for model in (local, local.root, seed):
        assert A["nsec"] not in repr(model) and "monkey" not in repr(model)
        assert "pass-phrase-x" not in repr(model) and "pass-phrase-x" not in str(model)
        assert "monkey" not in model.model_dump_json()
    assert isinstance(local.root, LocalLogin)
    assert NsignerLogin(method="nsigner", device="q").service == "qubes.NsignerRpc"


def test_login_params_schema_is_a_discriminated_union() -> None:
    schema = LoginParams.model_json_schema()
    assert schema["discriminator"]["propertyName"] == "method"
    assert set(schema["discriminator"]["mapping"]) == {
        "local",
        "seed",
        "readonly",
        "nip46",
        "nsigner",
    }


async def test_manager_turns_bad_dicts_into_invalid_params() -> None:
    manager = IdentityManager()
    with pytest.raises(BrowserdError) as err:
        await manager.login({"method": "local", "nsec": A["nsec"], "nsec_env": "X"})
    assert err.value.code is ErrorCode.INVALID_PARAMS
    assert "exactly one of" in err.value.message and A["nsec"] not in err.value.message
    with pytest.raises(BrowserdError, match="method"):
        await manager.switch_identity({"method": "telepathy"})
    assert not manager.logged_in
