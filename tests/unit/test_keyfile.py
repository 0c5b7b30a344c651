"""Key files are never overwritten; an empty owner-only slot (make install's) is filled."""

from __future__ import annotations

from pathlib import Path

import pytest

from nostr_browserd.daemon.keyfile import write_new_key


def test_a_new_key_is_0600_from_creation(tmp_path: Path) -> None:
    key = tmp_path / "nsec"
    write_new_key(key)
    assert key.stat().st_mode & 0o777 == 0o600 and key.read_text().startswith("nsec1")


def test_an_empty_owner_only_slot_is_filled(tmp_path: Path) -> None:
    slot = tmp_path / "nsec"
    slot.touch(mode=0o600)
    write_new_key(slot)
    assert slot.read_text().startswith("nsec1")


@pytest.mark.parametrize(
    ("content", "mode"),
    [("nsec1existing\n", 0o600), ("", 0o644)],
    ids=["a key already there", "an empty slot others can read"],
)
def test_anything_else_is_refused(tmp_path: Path, content: str, mode: int) -> None:
    key = tmp_path / "nsec"
    key.write_text(content)
    key.chmod(mode)
    with pytest.raises(FileExistsError):
        write_new_key(key)
    assert key.read_text() == content


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.touch(mode=0o600)
    (tmp_path / "nsec").symlink_to(target)
    with pytest.raises(OSError):
        write_new_key(tmp_path / "nsec")
    assert target.read_text() == ""
