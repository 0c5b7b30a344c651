"""The two ways to install, done as an operator would: `make install` (staged under DESTDIR)
and the wheel in a clean venv.  Each installed command answers ``--version`` and runs until
``status`` answers; the staged unit passes ``systemd-analyze verify``."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import tempfile
from importlib.util import cache_from_source
from pathlib import Path

import pytest

from nostr_browserd import __version__
from tests.e2e.test_cli import DaemonProcess
from tests.e2e.test_systemd import systemd_analyze  # noqa: F401  (a fixture)
from tests.fixtures.lock import uv
from tests.fixtures.paths import REPO
from tests.fixtures.relays import free_port

VENV = "opt/nostr-browserd"
UNIT = "nostr-browserd.service"
INSTALL_SECONDS = 300  # a cold uv cache downloads the runtime packages


def make(target: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DESTDIR": str(root)}
    done = subprocess.run(
        ["make", "-s", target, f"DESTDIR={root}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``root`` outside the venv: its mode and its content (or link)."""
    seen = {}
    for path in sorted(root.rglob("*")):
        if VENV in path.as_posix():
            continue
        if path.is_symlink():
            seen[str(path)] = (0, os.readlink(path))
        elif path.is_file():
            seen[str(path)] = (path.stat().st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            seen[str(path)] = (path.stat().st_mode, "")
    return seen


def venv_files(venv: Path) -> dict[str, str]:
    """Each installed package's directory and when it was written: a second install writes none."""
    return {p.name: str(p.stat().st_mtime_ns) for p in venv.glob("lib/python*/site-packages/*")}


async def answers_status(cli: str, env: dict[str, str], *config: str) -> str:
    """Wait until the installed command's own ``status`` answers; returns what it printed."""
    async with asyncio.timeout(90):
        while True:
            proc = await asyncio.create_subprocess_exec(
                cli, "status", *config, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            out, _ = await proc.communicate()
            if proc.returncode == 0:
                return out.decode()
            await asyncio.sleep(0.2)


def version_of(cli: Path) -> str:
    done = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_make_install_gives_a_service_that_runs(
    tmp_path: Path,
    systemd_analyze: None,  # noqa: F811
) -> None:
    root = tmp_path / "root"
    make("install", root)
    command = root / "usr/local/bin/nostr-browserd"
    etc = root / "etc/nostr-browserd"
    units = root / "etc/systemd/system"
    assert command.resolve() == root / VENV / "bin/nostr-browserd"
    # Compiled at install: the unit's user cannot write __pycache__ there, and would compile
    # every import again at each start.
    sources = list((root / VENV).glob("lib/python*/site-packages/nostr_browserd/**/*.py"))
    assert sources and not [p for p in sources if not Path(cache_from_source(str(p))).exists()]
    assert version_of(command) == f"nostr-browserd {__version__}"
    assert (etc / "nsec").stat().st_mode & 0o777 == 0o600 and (etc / "nsec").read_text() == ""
    assert (etc / "config.toml").read_text() == (REPO / "systemd/config.example.toml").read_text()
    for unit in ("nostr-browserd.service", "nostr-browserd@.service"):
        assert "ExecStart=/usr/local/bin/nostr-browserd run" in (units / unit).read_text()

    # The installed unit, its ExecStart pointed at the staged command (verify checks it exists).
    staged = tmp_path / "verify" / UNIT
    staged.parent.mkdir()
    text = (units / UNIT).read_text()
    staged.write_text(text.replace("/usr/local/bin/nostr-browserd", str(command)))
    verify = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(staged)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [x for x in verify.stderr.splitlines() if "nostr-browserd" in x or "Failed" in x]
    assert verify.returncode == 0 and not problems, verify.stderr

    # The operator fills the key slot and edits the config; a second install keeps both.
    key = subprocess.run([command, "keygen", etc / "nsec"], capture_output=True, text=True)
    assert key.returncode == 0 and key.stdout.startswith("npub1"), key.stderr
    with (etc / "config.toml").open("a") as config:
        config.write("# the operator's own line\n")
    before, packages = tree(root), venv_files(root / VENV)
    make("install", root)
    assert tree(root) == before and venv_files(root / VENV) == packages

    # The unit's ExecStart, with the unit's credential and state directory, until status answers.
    relay = free_port()
    env = {
        "CREDENTIALS_DIRECTORY": str(etc),
        "STATE_DIRECTORY": str(tmp_path / "state"),
        "NOSTR_BROWSERD_NOSTR_RELAYS": f"ws://127.0.0.1:{relay}",
        "NOSTR_BROWSERD_NOSTR_DISCOVERY_RELAYS": "",
        "NOSTR_BROWSERD_NOSTR_EMBEDDED_RELAY": "true",
    }
    daemon = DaemonProcess(tmp_path, env, config=etc / "config.toml", cli=str(command))
    try:
        status = await answers_status(
            str(command), daemon.env, "--config", str(etc / "config.toml")
        )
        assert f"nostr-browserd {__version__}" in status, status
        assert key.stdout.strip() in status
    finally:
        assert daemon.stop() == 0, daemon.err.read_text()

    make("uninstall", root)
    assert not command.exists() and not command.is_symlink() and not (root / VENV).exists()
    assert not (units / UNIT).exists() and not (units / "nostr-browserd@.service").exists()
    assert (etc / "config.toml").read_text().endswith("# the operator's own line\n")
    assert (etc / "nsec").read_text().startswith("nsec1")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist, built by uv with the pinned build backend."""
    dist = tmp_path_factory.mktemp("dist")
    done = uv("build", "--quiet", "--out-dir", str(dist), timeout=INSTALL_SECONDS)
    assert done.returncode == 0, done.stderr
    return dist


async def test_the_wheel_runs_from_a_clean_venv(built: Path, tmp_path: Path) -> None:
    wheels = list(built.glob("nostr_browserd-*.whl"))
    assert [w.name for w in wheels] == [f"nostr_browserd-{__version__}-py3-none-any.whl"]
    assert list(built.glob(f"nostr_browserd-{__version__}.tar.gz"))

    # A clean venv: the lock's runtime packages (hashes checked), then the wheel alone.  It
    # lives outside the suite's temporary tree, which the secrets scan reads: packages' own
    # READMEs hold the very example secrets some tests borrow (pyotp's).
    with tempfile.TemporaryDirectory(prefix="nostr-browserd-wheel-") as scratch:
        await wheel_runs(Path(scratch) / "venv", tmp_path, wheels[0])


async def wheel_runs(venv: Path, tmp_path: Path, wheel: Path) -> None:
    """Install ``wheel`` into a new ``venv``; it answers --version, and runs until status."""
    requirements = tmp_path / "requirements.txt"
    steps = [
        ("venv", "--quiet", str(venv), "--python", sys.executable),
        ("export", "--quiet", "--frozen", "--no-dev", "--no-emit-project", "-o", str(requirements)),
        ("pip", "install", "--quiet", "--python", str(venv), "-r", str(requirements)),
        ("pip", "install", "--quiet", "--python", str(venv), "--no-deps", str(wheel)),
    ]
    for step in steps:
        done = uv(*step, timeout=INSTALL_SECONDS)
        assert done.returncode == 0, (step, done.stderr)
    command = venv / "bin/nostr-browserd"
    assert version_of(command) == f"nostr-browserd {__version__}"

    # The embedded defaults (a local relay, a generated identity) until its status answers.
    daemon = DaemonProcess(tmp_path, {}, cli=str(command))
    try:
        status = await answers_status(str(command), daemon.env)
        # The banner comes once every part has started: the local channel may answer first.
        await daemon.wait_for("identity:")
        assert f"nostr-browserd {__version__}" in status and daemon.npub in status, status
    finally:
        assert daemon.stop() == 0, daemon.err.read_text()
