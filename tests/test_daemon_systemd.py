"""The unit file passes systemd's own checker and keeps the hardening the issue asks for."""

import shutil
import subprocess
from pathlib import Path

import pytest

from nostr_browserd.daemon.config import BROWSER_DIRS, load_config

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "systemd" / "nostr-browserd.service"


def directives(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def test_unit_is_hardened_notify_service():
    d = directives(UNIT.read_text())
    assert d["Type"] == "notify" and int(d["WatchdogSec"]) > 0
    assert d["DynamicUser"] == "yes" and d["StateDirectory"] == "nostr-browserd"
    assert d["LoadCredential"].startswith("nsec:")
    for key, value in {
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
    }.items():
        assert d[key] == value
    assert set(d["RestrictAddressFamilies"].split()) == {
        "AF_UNIX",
        "AF_INET",
        "AF_INET6",
        "AF_NETLINK",
    }
    assert d["MemoryMax"]
    assert "MemoryDenyWriteExecute" not in d, "V8's JIT needs writable+executable pages"


def test_the_example_configs_files_are_writable_under_the_unit(monkeypatch):
    """ProtectSystem=strict leaves the StateDirectory writable: every file the daemon writes
    must default to a place under it (or the unit would need ReadWritePaths=)."""
    d = directives(UNIT.read_text())
    assert d["ProtectSystem"] == "strict" and "ReadWritePaths" not in d
    state = Path("/var/lib") / d["StateDirectory"]
    monkeypatch.setenv("STATE_DIRECTORY", str(state))  # as systemd sets it
    config = load_config(REPO / "systemd" / "config.example.toml", {"CREDENTIALS_DIRECTORY": "/c"})
    assert config.state.dir == state
    for key in BROWSER_DIRS:
        assert getattr(config.browser, key).is_relative_to(state), key


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verify(tmp_path):
    # verify checks that ExecStart exists: point it at this checkout's console script.
    exe = REPO / ".venv" / "bin" / "nostr-browserd"
    if not exe.exists():
        exe = Path(shutil.which("nostr-browserd") or "/bin/true")
    text = UNIT.read_text().replace("/usr/local/bin/nostr-browserd", str(exe))
    unit = tmp_path / "nostr-browserd.service"
    unit.write_text(text)
    proc = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [
        line
        for line in proc.stderr.splitlines()
        if "nostr-browserd.service" in line or "Unknown" in line
    ]
    assert proc.returncode == 0 and not problems, proc.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_exposure_is_at_most_2_5():
    proc = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(UNIT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = next(x for x in proc.stdout.splitlines() if "Overall exposure level" in x)
    exposure = float(line.split(":")[1].split()[0])
    assert exposure <= 2.5, proc.stdout


def test_the_network_policy_has_a_layer_in_the_unit():
    d = directives(UNIT.read_text())
    denied = d["IPAddressDeny"].split()
    assert {"link-local", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"} <= set(
        denied
    )
    assert "localhost" not in denied and "any" not in denied  # relays, embedded relay, proxy
