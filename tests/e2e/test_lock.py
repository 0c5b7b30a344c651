"""uv.lock is the one source of versions: it agrees with pyproject.toml, and .venv is it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fixtures.lock import UV, locked, uv
from tests.fixtures.paths import REPO


def test_the_lock_agrees_with_pyproject() -> None:
    check = uv("lock", "--check")
    assert check.returncode == 0, check.stderr


def test_a_dependency_the_lock_lacks_is_caught(tmp_path: Path) -> None:
    """The check above fails when pyproject.toml moves without `make lock`."""
    # The version is read from the package (dynamic), so its __init__ comes too.
    for name in ("pyproject.toml", "uv.lock", "README.md", "src/nostr_browserd/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text().replace('    "pyotp>=2.9",\n', '    "pyotp>=2.9",\n    "six",\n')
    pyproject.write_text(text)
    check = uv("lock", "--check", "--project", str(tmp_path))
    assert check.returncode != 0
    assert "six" in check.stderr or "update" in check.stderr.lower(), check.stderr


def test_the_venv_holds_exactly_the_lock() -> None:
    """What the suite runs on is what the lock says, not what upstream released since."""
    assert UV.exists(), "scripts/setup.sh installs uv into .uv"
    check = uv("sync", "--frozen", "--all-extras", "--check")
    assert check.returncode == 0, check.stderr
    import playwright._repo_version as installed

    assert installed.version == locked("playwright")
