"""Protocol responses as MCP content, and the command-line checks that need no browser."""

from __future__ import annotations

import base64

import pytest

from nostr_browserd.cli.mcp import main
from nostr_browserd.mcp.http import load_token, parse_address
from nostr_browserd.mcpshape.content import EMBED_LIMIT, Shelf, shelved, to_result


def download(size: int) -> dict:
    blob = base64.b64encode(b"x" * size).decode()
    data = {"name": "report.csv", "size": size, "sha256": "0" * 64, "base64": blob}
    return {"id": "1", "success": True, "data": data}


def test_a_small_download_is_embedded() -> None:
    result = to_result(download(10), Shelf())
    resource = result.content[0]
    assert resource.type == "resource" and resource.resource.mime_type == "text/csv"
    assert base64.b64decode(resource.resource.blob) == b"x" * 10
    assert "report.csv" in result.content[1].text and "base64" not in result.content[1].text


def test_a_large_download_is_a_link_that_resources_read_serves() -> None:
    shelf = Shelf(size=2)
    size = EMBED_LIMIT  # base64 of this many bytes is over the limit
    link = to_result(download(size), shelf).content[0]
    assert link.type == "resource_link" and link.size == size
    assert base64.b64decode(shelf.read(str(link.uri)).blob) == b"x" * size
    for _ in range(2):  # the shelf keeps the newest few only
        to_result(download(size), shelf)
    assert shelf.read(str(link.uri)) is None
    assert len(shelf.listing()) == 2


def test_without_a_shelf_a_large_file_is_embedded_and_shelved_on_the_other_side() -> None:
    """The daemon's ContextVM side has no resources/read: it embeds; mcp --to then shelves."""
    embedded = to_result(download(EMBED_LIMIT), None)
    assert embedded.content[0].type == "resource"
    shelf = Shelf()
    link = shelved(embedded, shelf).content[0]
    assert link.type == "resource_link" and str(link.uri).endswith("/report.csv")
    assert base64.b64decode(shelf.read(str(link.uri)).blob) == b"x" * EMBED_LIMIT
    small = to_result(download(10), None)
    assert shelved(small, shelf).content == small.content


def test_an_error_is_an_error_result_with_its_code() -> None:
    response = {"id": "1", "success": False, "error": {"code": "DENIED", "message": "No."}}
    result = to_result(response, Shelf())
    assert result.is_error and result.content[0].text == "DENIED: No."


def test_http_serves_loopback_only(tmp_path) -> None:
    assert parse_address("127.0.0.1:8931") == ("127.0.0.1", 8931)
    assert parse_address("[::1]:8931") == ("::1", 8931)
    for bad in ("0.0.0.0:8931", "example.com:80", "127.0.0.1", "127.0.0.1:0"):
        with pytest.raises(ValueError):
            parse_address(bad)
    token = load_token(tmp_path / "token")
    assert load_token(tmp_path / "token") == token and len(token) >= 32
    assert (tmp_path / "token").stat().st_mode & 0o777 == 0o600


def test_usage_errors(capsys, monkeypatch, tmp_path) -> None:
    for argv in ([], ["--to", "npub1x"], ["--local", "--to", "npub1x"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    # A typo in --caps is refused before the store opens: no state directory is made.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["--local", "--caps", "nonsense"]) == 2
    assert "unknown tool families or names: nonsense" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()
