"""End to end through the console script: zero-config ``run`` with its embedded relay, the
``send`` controller CLI, ``status``, SIGHUP reloading the allow-list, SIGTERM finishing work."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nostr_browserd.cli.main import fetch_status
from tests.e2e.test_resilience import chromium_main_processes
from tests.fixtures.browser import SANDBOX
from tests.fixtures.leaks import LEAKS
from tests.fixtures.relays import free_port

CLI = str(Path(sys.executable).with_name("nostr-browserd"))


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class DaemonProcess:
    """``nostr-browserd run`` in a subprocess on free ports, its banner and log captured."""

    def __init__(
        self, workdir: Path, env: dict[str, str], config: Path | None = None, cli: str = CLI
    ) -> None:
        self.relay_port, self.local_port = free_port(), free_port()
        self.relay = f"ws://127.0.0.1:{self.relay_port}"
        self.env = {
            **os.environ,
            "NOSTR_BROWSERD_STATE_DIR": str(workdir / "state"),
            "NOSTR_BROWSERD_NOSTR_EMBEDDED_RELAY_PORT": str(self.relay_port),
            "NOSTR_BROWSERD_LOCAL_PORT": str(self.local_port),
            "NOSTR_BROWSERD_BROWSER_SANDBOX": str(SANDBOX).lower(),
            "NOSTR_BROWSERD_BROWSER_BLOCK_PRIVATE_NETWORKS": "false",  # the site is on loopback
            **env,
        }
        self.out, self.err = workdir / "daemon.out", workdir / "daemon.err"
        args = [cli, "run"] + (["--config", str(config)] if config else [])
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, env=self.env)

    async def wait_for(self, text: str, stream: str = "out", timeout: float = 30) -> str:
        path = self.out if stream == "out" else self.err
        async with asyncio.timeout(timeout):
            while text not in path.read_text():
                assert self.proc.poll() is None, self.err.read_text()
                await asyncio.sleep(0.05)
        return path.read_text()

    @property
    def token_file(self) -> Path:
        """Where the daemon generates its local channel's token."""
        return Path(self.env["NOSTR_BROWSERD_STATE_DIR"]) / "local-token"

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()

    @property
    def npub(self) -> str:
        line = next(x for x in self.out.read_text().splitlines() if "identity:" in x)
        return line.split()[1]

    def stop(self) -> int:
        if self.proc.poll() is None:
            status = fetch_status(self.local_port, self.token) if self.token_file.exists() else None
            LEAKS.output(json.dumps(status), "a daemon's status page")
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture
def daemon_process(tmp_path):
    """``daemon_process(env={...}, config=None)``; each is stopped at the end, pass or fail."""
    started: list[DaemonProcess] = []

    def start(env: dict[str, str] | None = None, config: Path | None = None) -> DaemonProcess:
        started.append(DaemonProcess(tmp_path, env or {}, config))
        return started[-1]

    yield start
    for process in started:
        process.stop()


async def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    LEAKS.output(out + err, f"nostr-browserd {args[0]}'s output")
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), err.decode())


async def keygen(path: Path) -> str:
    result = await cli("keygen", str(path))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


async def test_zero_config_run_says_who_where_and_how(daemon_process):
    daemon = daemon_process()
    banner = await daemon.wait_for("Send it a command")
    assert daemon.relay in banner and "(embedded, loopback only)" in banner
    assert "controllers: none yet" in banner and "NOSTR_BROWSERD_NOSTR_CONTROLLERS" in banner
    assert f"send --to {daemon.npub} --key controller.nsec --relay {daemon.relay}" in banner
    state = Path(daemon.env["NOSTR_BROWSERD_STATE_DIR"])
    identity, token = state / "identity.nsec", state / "local-token"
    assert identity.stat().st_mode & 0o777 == 0o600
    assert token.stat().st_mode & 0o777 == 0o600 and f"local token: {token}" in banner
    assert "nsec1" not in banner + daemon.err.read_text()
    assert token.read_text().strip() not in banner + daemon.err.read_text()
    assert daemon.stop() == 0


async def test_send_status_and_sigterm_with_a_running_command(daemon_process, tmp_path, site_url):
    key = tmp_path / "controller.nsec"
    daemon = daemon_process({"NOSTR_BROWSERD_NOSTR_CONTROLLERS": await keygen(key)})
    await daemon.wait_for("Send it a command")
    base = ["send", "--to", daemon.npub, "--key", str(key), "--relay", daemon.relay]
    opened = await cli(*base, "open", f"{site_url}/form.html")
    assert opened.returncode == 0, opened.stderr
    assert "form.html" in opened.stdout and not opened.stdout.startswith("{")
    title = await cli(*base, "--nip04", "--json", "get", "title")
    assert json.loads(title.stdout)["data"]["title"] == "Form"
    shot = tmp_path / "shot.png"
    saved = await cli(*base, "--out", str(shot), "screenshot")
    assert saved.returncode == 0, saved.stderr
    assert shot.read_bytes().startswith(b"\x89PNG") and str(shot) in saved.stdout
    failed = await cli(*base, "click", "@e999")
    assert failed.returncode == 1 and "STALE_REF" in failed.stdout

    status = await cli("status", env=daemon.env)
    assert daemon.npub in status.stdout and f"{daemon.relay}: connected" in status.stdout
    assert "screenshot -> ok" in status.stdout and "click -> STALE_REF" in status.stdout
    assert "  local: up, contexts 1, ~17 MB, network policy: " in status.stdout, status.stdout
    stranger = {**daemon.env, "NOSTR_BROWSERD_STATE_DIR": str(tmp_path / "elsewhere")}
    refused = await cli("status", env=stranger)  # no token: refused, not "not running"
    assert refused.returncode == 1 and "refused the status request (401)" in refused.stderr

    # SIGTERM while a command runs: it finishes, its reply goes out, the exit code is 0.
    waiting = asyncio.create_task(cli(*base, "wait", "1500"))
    async with asyncio.timeout(30):
        while not (
            await asyncio.to_thread(fetch_status, daemon.local_port, daemon.token) or {}
        ).get("running"):
            await asyncio.sleep(0.02)
    browsers = chromium_main_processes(daemon.proc.pid)
    assert len(browsers) == 1, browsers
    daemon.proc.send_signal(signal.SIGTERM)
    finished = await waiting
    assert finished.returncode == 0, finished.stderr
    assert "waited" in finished.stdout  # the running command's own reply, not a refusal
    assert await asyncio.to_thread(daemon.proc.wait, 30) == 0
    assert "stopped" in daemon.err.read_text()
    # and its browser is gone with it
    async with asyncio.timeout(10):
        while any(is_running(pid) for pid in browsers):
            await asyncio.sleep(0.05)


async def test_sighup_reloads_the_allow_list(daemon_process, tmp_path):
    key = tmp_path / "controller.nsec"
    controller = await keygen(key)
    config = tmp_path / "config.toml"
    config.write_text('[identity]\nmethod = "local"\n[nostr]\nembedded_relay = true\n')
    daemon = daemon_process(config=config)
    await daemon.wait_for("Send it a command")
    nostr = f'[nostr]\nembedded_relay = true\ncontrollers = ["{controller}"]\n'
    config.write_text(f'[identity]\nmethod = "local"\n{nostr}')
    daemon.proc.send_signal(signal.SIGHUP)
    await daemon.wait_for("reloaded the allow-list: 1 controller(s)", stream="err")
    base = ["send", "--to", daemon.npub, "--key", str(key), "--relay", daemon.relay]
    answer = await cli(*base, "--json", "get", "url")
    assert answer.returncode == 0 and json.loads(answer.stdout)["success"]


async def test_a_config_without_identity_waits_for_login(daemon_process, tmp_path):
    """Issue 15: the agent-first start: the local channel up, no identity, no key generated."""
    config = tmp_path / "config.toml"
    config.write_text("[nostr]\nembedded_relay = true\n")
    daemon = daemon_process(config=config)
    banner = await daemon.wait_for("waiting for login on the local channel")
    identity = next(line for line in banner.splitlines() if "identity:" in line)
    assert "npub1" not in identity and "(none)" in identity
    await daemon.wait_for("waiting for login on the local channel", stream="err")
    status = await cli("status", "--config", str(config), env=daemon.env)
    assert status.returncode == 0 and "waiting for login" in status.stdout, status
    assert not (tmp_path / "state" / "identity.nsec").exists()


async def test_systemd_notify_ready_watchdog_stopping(daemon_process, tmp_path):
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        server.setblocking(False)
        daemon = daemon_process({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
        loop = asyncio.get_running_loop()
        received: list[str] = []

        async def until(state: str) -> None:
            async with asyncio.timeout(30):
                while state not in received:
                    received.append((await loop.sock_recv(server, 4096)).decode())

        await until("READY=1")
        await until("WATCHDOG=1")
        assert any(m.startswith("STATUS=serving as npub1") for m in received)
        daemon.proc.send_signal(signal.SIGTERM)
        await until("STOPPING=1")
        assert await asyncio.to_thread(daemon.proc.wait, 30) == 0
