"""Secrets never leak: full login/logout cycles for every method, with DEBUG logs captured,
and every log line, printed line, result, status, repr and error searched for the secrets.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from pydantic import ValidationError

from nostr_browserd.errors import BrowserdError
from nostr_browserd.login.bunker_server import BunkerServer
from nostr_browserd.login.manager import IdentityManager, LoginParams
from nostr_browserd.nostr import nip46
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.leaks import LEAKS
from tests.fixtures.signers import NIP06, private_file, qrexec_standin_fixture  # noqa: F401

# Words chosen to be unlike anything a log line says, so a whole-word hit means a leak.
MNEMONIC = (
    "zebra oyster walnut giraffe lobster pumpkin volcano satoshi jaguar kangaroo mushroom pigeon"
)
PASSPHRASE = "correct-horse-passphrase-7731"
BUNKER_SECRET = "bunker-secret-9f3a77c1"
LEAKS.seed(MNEMONIC, "test_login_secrets' seed")
LEAKS.secret(PASSPHRASE, "test_login_secrets' passphrase")
LEAKS.secret(BUNKER_SECRET, "test_login_secrets' bunker secret")
LEAKS.secret("giraffee", "test_login_secrets' misspelt seed word")


async def test_no_secret_in_logs_output_results_or_errors(
    tmp_path, monkeypatch, caplog, capsys, local_relay_factory, qrexec_standin
) -> None:
    caplog.set_level(logging.DEBUG)
    key = KeySigner.generate()
    server_key = KeySigner.generate()
    nsec, hexkey = nsec_encode(key.secret), key.secret.hex()
    seen: list[object] = []  # everything a caller or an operator could get to see

    key_file = private_file(tmp_path, "key", nsec)
    seed_file = private_file(tmp_path, "seed", MNEMONIC)
    phrase_file = private_file(tmp_path, "phrase", PASSPHRASE)
    monkeypatch.setenv("LEAK_TEST_KEY", hexkey)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    relay = await local_relay_factory()
    server = BunkerServer(server_key, [relay.url], secret=BUNKER_SECRET)
    await server.start()
    try:
        bunker_url = server.bunker_url
        good = [
            {"method": "local", "nsec": nsec},
            {"method": "local", "nsec": hexkey},
            {"method": "local", "nsec_file": str(key_file)},
            {"method": "local", "nsec_env": "LEAK_TEST_KEY"},
            {"method": "local", "credential": "key"},
            {"method": "seed", "mnemonic": MNEMONIC, "passphrase": PASSPHRASE, "account": 1},
            {"method": "seed", "seed_file": str(seed_file), "passphrase_file": str(phrase_file)},
            {"method": "readonly", "npub": NIP06[0]["npub"]},
            {"method": "nip46", "bunker_url": bunker_url},
            {"method": "nsigner", "device": "nostr_signer", "index": 0},
        ]
        manager = IdentityManager()
        for params in good:
            model = LoginParams.model_validate(params)
            seen += [repr(model), str(model), model.model_dump_json()]
            seen.append(await manager.login(model))
            seen += [manager.status(), repr(manager.signer)]
            try:
                seen.append(await manager.signer.sign_event({"kind": 1, "content": "x"}))
            except BrowserdError as exc:  # read-only
                seen.append(exc.to_dict())
            seen.append(await manager.logout())

        words = MNEMONIC.split()
        misspelt = " ".join([*words[:3], "giraffee", *words[4:]])
        key_file.chmod(0o644)
        bad = [
            {"method": "nip46", "bunker_url": bunker_url},  # the secret is used up now
            {"method": "nip46", "bunker_url": bunker_url.replace(BUNKER_SECRET, "x" + PASSPHRASE)},
            {"method": "seed", "mnemonic": misspelt, "passphrase": PASSPHRASE},
            {"method": "seed", "mnemonic": " ".join(reversed(words))},
            {"method": "local", "nsec_file": str(key_file)},
            {"method": "local", "nsec": nsec[:-1]},
            {"method": "local", "nsec": nsec, "nsec_env": "X"},
            {"method": "seed", "mnemonic": MNEMONIC, "bogus": PASSPHRASE},
            {"method": "readonly", "npub": nsec},
        ]
        for params in bad:
            with pytest.raises((BrowserdError, ValidationError)) as err:
                await manager.login(params)
            seen.append(str(err.value))
            if isinstance(err.value, BrowserdError):
                seen.append(err.value.to_dict())
            else:
                seen.append(err.value.errors(include_input=False))
        seen.append(repr(server))
        seen.append(server.clients)
    finally:
        await server.aclose()

    out = capsys.readouterr()
    text = "\n".join(
        [caplog.text, *(r.getMessage() for r in caplog.records), out.out, out.err]
        + [x if isinstance(x, str) else json.dumps(x, default=str) for x in seen]
    )
    assert len(caplog.records) > 10  # the cycles did log something
    secrets = [
        nsec,
        hexkey,
        nsec_encode(server_key.secret),
        server_key.secret.hex(),
        PASSPHRASE,
        BUNKER_SECRET,
        "giraffee",
    ]
    leaks = [s for s in secrets if s.lower() in text.lower()]
    leaks += [w for w in MNEMONIC.split() if re.search(rf"\b{w}\b", text, re.IGNORECASE)]
    assert leaks == []
    # and the pairing URL itself (which holds the secret) was never logged or returned
    assert bunker_url not in text and nip46.parse_bunker_url(bunker_url).secret == BUNKER_SECRET
