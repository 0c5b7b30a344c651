"""Fuzzing every decoder of outside input: nothing may raise but the module's documented error.

Targets: the text grammar and the JSON command parser (``BrowserdError``, through the role
check too), every NIP decoder (19, 04, 44, 59 unwrap, 46 messages and URIs, relay frames:
their own ``NostrError``), and the config loader (``ConfigError``).  Each target runs
``FUZZ_EXAMPLES`` examples: 10,000 in the normal run, 100,000 under ``make fuzz``.

Hypothesis draws bytes, and each byte picks a token from a table of the input's own
vocabulary (brackets, keys, verbs, tool names, TOML sections…): inputs come out close to
valid, where the bugs are, at the cost of drawing plain bytes (recursive strategies cost
six times as much, and 10,000 examples per target must stay cheap).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request
from nostr_browserd.daemon.config import ConfigError, load_config
from nostr_browserd.errors import BrowserdError
from nostr_browserd.nostr import nip04, nip19, nip44, nip46, nip59
from nostr_browserd.nostr.errors import NostrError
from nostr_browserd.nostr.nip01 import RelayMessageError, finalize_event, parse_relay_message
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import resigned, verifies_elsewhere

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10000"))
# ~6 s of CPU per target at 10,000; a loaded machine stretches that past the default 120 s.
pytestmark = pytest.mark.timeout(max(600, EXAMPLES // 10))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # every run explores afresh; a failure prints its reproducing example
    suppress_health_check=list(HealthCheck),
)

DEEP = ["[" * 1000, "[" * 40, '{"a":' * 40, "[" * 20]  # past json's recursion, past MAX_DEPTH
JSON = [
    *DEEP,
    *"[]{},:",
    '"a"',
    '""',
    "0",
    "-1",
    "1e999",
    "1.5",
    "9" * 5000,
    "null",
    "true",
    "false",
    '"\\u0000"',
    '"\\ud800"',
    " ",
    '"' + "ab" * 32 + '"',
    '"' + "0" * 128 + '"',
]


def tokens(*tables: list[str], size: int = 40) -> st.SearchStrategy[str]:
    """Text made of up to ``size`` tokens, each picked by one drawn byte."""
    table = [token for t in tables for token in t]
    return st.binary(max_size=size).map(lambda b: "".join(table[x % len(table)] for x in b))


def quoted(*names: str) -> list[str]:
    return [json.dumps(name) for name in names]


def run_now(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never waits (a local KeySigner's), without an event loop each time."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("the coroutine waited for something")


def only(error: type[BaseException], call: Any, *args: Any) -> Any:
    """Run ``call(*args)``: returning or raising ``error`` is fine, anything else fails.
    Returns what it returned (None when it raised ``error``), for the caller to check."""
    with contextlib.suppress(error):
        return call(*args)
    return None


# -- commands ---------------------------------------------------------------------------

TOOL_NAMES = sorted(tool.name for tool in REGISTRY)
WORDS = [
    *(name.replace("_", " ") + " " for name in TOOL_NAMES),
    *("@e1", "@e99", "-i", "-d", "--url", "--", "t1", "'", '"', "\\", "{", "*", "0", "-5"),
    *("https://x.test/", '{"tool":"open"}', " ", " ", "a", "é", "\x00"),
]


def command(raw: str) -> None:
    """Parse as the daemon does, then validate and run the role check on the result."""
    request = parse_request(raw, REGISTRY)
    REGISTRY.validate(request.tool, request.params)
    REGISTRY.is_gated(request.tool, request.params)
    REGISTRY.tools_run_by(request.tool, request.params)


@FUZZ
@given(tokens(WORDS) | st.text(max_size=40))
def test_text_grammar(line: str) -> None:
    only(BrowserdError, command, line)


COMMAND_KEYS = quoted("id", "tool", "params", *TOOL_NAMES[::3], "url", "ref", "commands", "text")


@FUZZ
@given(tokens(JSON, COMMAND_KEYS, quoted(*TOOL_NAMES), ['{"tool":"batch","params":{"commands":']))
def test_json_command_parser(raw: str) -> None:
    only(BrowserdError, command, raw if raw.startswith("{") else "{" + raw)


# -- NIP decoders -----------------------------------------------------------------------

BECH32 = [*"qpzry9x8gf2tvdw0s3jn54khce6mua7l1", "npub1", "nsec1", "note1", "nprofile1", "naddr1"]
NIP19_DECODERS = (
    nip19.decode,
    nip19.decode_npub,
    nip19.decode_nsec,
    nip19.decode_nprofile,
    nip19.decode_nevent,
    nip19.decode_naddr,
    nip19.parse_pubkey,
    nip19.parse_secret,
)
HRPS = ["npub", "nsec", "note", "nprofile", "nevent", "naddr"]


@FUZZ
@given(
    tokens(BECH32, size=80)
    | st.binary(max_size=200).map(lambda b: nip19.bech32_encode(HRPS[len(b) % 6], b))
)
def test_nip19(text: str) -> None:
    for decode in NIP19_DECODERS:
        only(nip19.Bech32Error, decode, text)


ALICE, BOB = KeySigner(b"\x01" * 32), KeySigner(b"\x02" * 32)
NIP44_KEY = nip44.conversation_key(ALICE.secret, BOB.pubkey)


@FUZZ
@given(
    st.tuples(st.binary(max_size=64), st.binary(max_size=20)).map(
        lambda t: base64.b64encode(t[0]).decode() + "?iv=" + base64.b64encode(t[1]).decode()
    )
    | st.text(max_size=60)
)
def test_nip04(payload: str) -> None:
    only(nip04.Nip04Error, nip04.decrypt, ALICE.secret, BOB.pubkey, payload)


@FUZZ
@given(
    st.binary(max_size=200).map(lambda b: base64.b64encode(b"\x02" + b).decode())
    | st.text(max_size=60)
)
def test_nip44(payload: str) -> None:
    only(nip44.Nip44Error, nip44.decrypt, payload, NIP44_KEY)


SIGS = st.binary(min_size=64, max_size=64).map(bytes.hex)
EVENT_KEYS = quoted("id", "pubkey", "created_at", "kind", "tags", "content", "sig", ALICE.pubkey)
SEAL = ['{"kind":13,"content":', '"tags":[],"created_at":1,', '"sig":', '"pubkey":']


def wrap_around(content: str) -> dict[str, Any]:
    """A valid kind-1059 wrap to Bob whose encrypted content is ``content``."""
    encrypted = nip44.encrypt(content or " ", NIP44_KEY)
    return finalize_event(
        {"kind": 1059, "content": encrypted, "tags": [["p", BOB.pubkey]]}, ALICE.secret
    )


@FUZZ
@given(
    tokens(JSON, EVENT_KEYS, SEAL).map(wrap_around)
    | st.builds(
        functools.partial(resigned, ALICE, BOB.pubkey),
        tokens(JSON, EVENT_KEYS),
        st.none() | SIGS,
        st.none() | SIGS,
    )
)
def test_nip59_unwrap(event: dict[str, Any]) -> None:
    """Whatever unwrap accepts, its wrap and seal are signed (nostr-sdk agrees)."""
    opened = only(nip59.UnwrapError, run_now, nip59.unwrap(event, BOB))
    if opened is not None:
        assert verifies_elsewhere(opened.wrap) and verifies_elsewhere(opened.seal)


NIP46_KEYS = quoted("id", "method", "params", "result", "error", "auth_url", *nip46.METHODS)


@FUZZ
@given(tokens(JSON, NIP46_KEYS))
def test_nip46_messages(text: str) -> None:
    only(nip46.Nip46Error, nip46.decode_message, text)


URI = [
    "bunker://",
    "nostrconnect://",
    ALICE.pubkey,
    "?",
    "&",
    "relay=",
    "ws://x",
    "wss://",
    "secret=",
    "perms=",
    "sign_event:",
    "1",
    ",",
    "nip44_decrypt",
    "name=",
    "metadata=",
    "%",
    "%5B" * 40,
    *DEEP,
]


@FUZZ
@given(tokens(URI))
def test_nip46_uris_and_permissions(text: str) -> None:
    only(nip46.Nip46Error, nip46.parse_bunker_url, text)
    only(nip46.Nip46Error, nip46.parse_nostrconnect_uri, text)
    only(nip46.Nip46Error, nip46.parse_perms, text)


VERBS = quoted("EVENT", "EOSE", "CLOSED", "OK", "NOTICE", "AUTH", "COUNT", "sub")


@FUZZ
@given(tokens(JSON, VERBS, EVENT_KEYS) | st.binary(max_size=20))
def test_relay_frames(raw: str | bytes) -> None:
    only(RelayMessageError, parse_relay_message, raw)


def test_every_nip_error_is_a_nostr_error() -> None:
    """The documented error of every decoder above shares the root NostrError."""
    errors = [nip19.Bech32Error, nip04.Nip04Error, nip44.Nip44Error, nip59.UnwrapError]
    for error in [*errors, nip46.Nip46Error, RelayMessageError]:
        assert issubclass(error, NostrError) and issubclass(error, ValueError)


# -- the config loader -----------------------------------------------------------------

TOML = [
    *("\n[identity]\n", "\n[nostr]\n", "\n[browser]\n", "\n[state]\n", "\n[local]\n"),
    "\n[[controllers]]\n",
    *("method", "nsec_file", "npub", "bunker_url", "bunker_url_file", "account", "relays"),
    *("controllers", "dm", "freshness", "command_timeout", "result_cap", "port", "token_file"),
    *("pubkey", "role", "approver", "dir", "seen_retention", "enabled", "downloads_dir"),
    *(" = ", "\n", '"nip46"', '"local"', '"full"', '["ws://x"]', '["nip17"]', "[", "]", ","),
    *("1", "-1", "0.5", "1e999", "nan", "true", '"~/x"', '"npub1x"', json.dumps(ALICE.pubkey)),
    *('"', "'", "#", "=", "{", "}", "."),
]
ENV = ["NOSTR_BROWSERD_NOSTR_RELAYS", "NOSTR_BROWSERD_LOCAL_PORT", "NOSTR_BROWSERD_X", "HOME"]


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "config.toml"


@FUZZ
@given(text=tokens(TOML, size=60), env=st.binary(max_size=2), value=tokens(TOML, size=4))
def test_config_loader(config_path: Path, text: str, env: bytes, value: str) -> None:
    config_path.write_text(text, encoding="utf-8")
    environ = {"HOME": "/nonexistent", **{ENV[b % len(ENV)]: value for b in env}}
    only(ConfigError, load_config, config_path, environ)
