"""Chromium runs inside its own sandbox; where it cannot, the daemon refuses to start unless told.

Chromium refuses its sandbox to root ("Running as root without --no-sandbox is not
supported"), and the tests run as root on the development machine and in CI.  So the test
fixtures set ``sandbox = false`` explicitly when root (tests/fixtures/browser.py), and the test
that the sandbox really runs starts the browser as an unprivileged user, as the systemd unit's
``DynamicUser`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import nostr_browserd
from nostr_browserd.browser import endpoints as endpoints_module
from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.pool import BrowserPool
from nostr_browserd.errors import BrowserdError, ErrorCode
from tests.e2e.test_systemd import UNIT, directives
from tests.fixtures.paths import TESTS

PROBE = TESTS / "bin" / "sandbox-probe"
NOBODY = 65534


def _others_may_run(path: Path) -> bool:
    """Whether a user other than root can execute ``path`` (every parent searchable)."""
    path = path.resolve()
    if not path.exists() or not path.stat().st_mode & stat.S_IXOTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def _unprivileged_python() -> list[str]:
    """How to run this test's Python code as an unprivileged user."""
    if os.geteuid() != 0:
        return [sys.executable]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.executable), Path("/usr/bin") / version):
        if _others_may_run(candidate) and shutil.which("setpriv"):
            ids = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            return ["setpriv", *ids, str(candidate.resolve())]
    pytest.skip(f"no {version} that an unprivileged user may run (needed to drop root)")


async def test_the_running_chromium_has_its_sandbox_on(tmp_path):
    home = Path(tempfile.mkdtemp(prefix="sandbox-probe-"))
    try:
        if os.geteuid() == 0:
            os.chown(home, NOBODY, NOBODY)
        packages = [str(Path(nostr_browserd.__file__).parent.parent), *site.getsitepackages()]
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONPATH": os.pathsep.join(packages),
        }
        result = subprocess.run(
            [*_unprivileged_python(), str(PROBE)],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-3000:]
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["uid"] != 0
    processes = probe["processes"]
    main = [p for p in processes if not any(a.startswith("--type=") for a in p["args"])]
    renderers = [p for p in processes if "--type=renderer" in p["args"]]
    assert main and renderers, processes
    for process in processes:
        assert "--no-sandbox" not in process["args"], process["args"]
    # The sandbox really holds the page: renderers run under a seccomp-bpf filter (mode 2).
    assert all(r["seccomp"] == 2 for r in renderers), renderers
    # and in namespaces of their own: the ones the unit's RestrictNamespaces= allows, no more.
    created = {
        kind
        for process in processes
        for kind, ns in process["namespaces"].items()
        if ns != main[0]["namespaces"][kind]
    }
    assert {"user", "pid", "net"} <= created, created
    assert created <= set(directives(UNIT.read_text())["RestrictNamespaces"].split())


async def test_as_root_the_sandbox_is_refused_unless_turned_off_explicitly(monkeypatch):
    monkeypatch.setattr(endpoints_module.os, "geteuid", lambda: 0)
    pool = BrowserPool(BrowserConfig())
    with pytest.raises(BrowserdError) as refused:
        await pool.start()
    await pool.close()
    assert refused.value.code is ErrorCode.UNAVAILABLE
    assert "as root" in refused.value.message and "sandbox = false" in refused.value.message
