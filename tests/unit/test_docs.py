"""The README and docs/ are part of the product: the tool catalog must match the registry."""

from __future__ import annotations

import subprocess
import sys

from tests.fixtures.paths import REPO

ROOT = REPO


def test_docs_catalog_lists_every_registered_tool() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "catalog_table.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme
    assert ci.strip().endswith("make test")
