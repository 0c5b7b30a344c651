"""End to end: saved logins (in the state store), downloads and uploads under the state directory.

Two controllers on one daemon: a login state one of them saves is its own (another cannot
load it), files land in per-controller directories, and replies name files, never paths.
"""

import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from nostr_browserd.errors import ErrorCode
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.postgres import fresh_database
from tests.fixtures.site import SITE


@pytest.fixture(params=["sqlite", "postgresql"])
def state_store(request) -> dict[str, Any]:
    """The daemon's ``[state]`` section: its SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return {}
    return {"database": fresh_database(request.getfixturevalue("postgres_dsn"))}


async def ok(controller: SdkController, daemon: str, tool: str, **params: Any) -> dict[str, Any]:
    """Run one command through the daemon; its data, after checking it succeeded."""
    answer = await controller.command(daemon, {"tool": tool, "params": params})
    assert answer["success"], answer
    return answer["data"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_saved_login_is_its_controllers_alone(
    nostr_relay_url, site_url, start_daemon, tmp_path, state_store
):
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as bob,
    ):
        older = tmp_path / "state" / "browser" / alice.pubkey  # an older release's file
        for directory in (older.parent.parent, older.parent, older):
            directory.mkdir(mode=0o700)
        (older / "old.json").write_text(json.dumps({"cookies": [], "origins": []}))
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[alice.npub, bob.npub], state=state_store
        )
        me = await daemon_pubkey(daemon)
        for sub in ("browser", "downloads", "uploads"):
            assert mode(daemon.state_dir / sub) == 0o700, sub
        login = f"{site_url}/login.html"
        await ok(alice, me, "open", url=login)
        await ok(alice, me, "fill", selector="#user", value="ada")
        await ok(alice, me, "click", selector="#go")
        assert (await ok(alice, me, "get_text", selector="#who"))["text"] == "Signed in as ada"

        saved = await ok(alice, me, "state_save", name="work")
        assert saved["cookies"] == 1
        kept = await daemon.store.load_state(alice.pubkey, "work")
        assert "ada" in json.dumps(kept), "in the daemon's state store"
        assert list(older.iterdir()) == [], "moved into the store at start"

        theirs = await bob.command(me, {"tool": "state_load", "params": {"name": "work"}})
        assert theirs["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "No saved state 'work'" in theirs["error"]["message"]
        assert (await ok(bob, me, "state_list"))["states"] == []

        await ok(alice, me, "cookies_clear")
        await ok(alice, me, "open", url=login)
        assert (await ok(alice, me, "get_text", selector="#who"))["text"] == "Signed out"
        assert (await ok(alice, me, "state_load", name="work"))["cookies"] == 1
        await ok(alice, me, "open", url=login)
        assert (await ok(alice, me, "get_text", selector="#who"))["text"] == "Signed in as ada"
        assert (await ok(alice, me, "state_list"))["states"] == ["old", "work"]


async def test_files_in_and_out_under_the_state_dir(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        await ok(phone, me, "open", url=f"{site_url}/catalog.html")

        answer = await phone.command(me, {"tool": "download", "params": {"selector": "#dl"}})
        assert answer["success"], answer
        body = (SITE / "download.txt").read_bytes()
        got = answer["data"]
        assert (got["name"], got["size"]) == ("download.txt", len(body))
        assert got["sha256"] == hashlib.sha256(body).hexdigest()
        saved = daemon.state_dir / "downloads" / phone.pubkey / "download.txt"
        assert saved.read_bytes() == body and mode(saved) == 0o600
        assert str(daemon.state_dir) not in json.dumps(answer), "a reply never names a path"

        (daemon.state_dir / "uploads" / phone.pubkey).mkdir()
        (daemon.state_dir / "uploads" / phone.pubkey / "cv.txt").write_text("curriculum")
        sent = await ok(phone, me, "upload", selector="#one", files=["cv.txt"])
        assert sent["ok"] and sent["files"] == [{"name": "cv.txt", "size": 10}]
        outside = await phone.command(
            me, {"tool": "upload", "params": {"selector": "#one", "files": ["../state.sqlite3"]}}
        )
        assert outside["error"]["code"] == ErrorCode.FORBIDDEN
