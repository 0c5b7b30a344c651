"""The unit file passes systemd's own checker and keeps the hardening the issue asks for."""

import shutil
import subprocess
from pathlib import Path

import pytest

from nostr_browserd.daemon.config import BROWSER_DIRS, load_config
from tests.fixtures.paths import REPO
from tests.fixtures.required import missing

REPO = REPO
UNIT = REPO / "systemd" / "nostr-browserd.service"
DROP_IN = REPO / "systemd" / "nostr-browserd@.service.d" / "worker.conf"


def directives(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def assignments(text: str) -> list[tuple[str, str]]:
    """Every ``Key=value`` line in order (a drop-in resets a list with an empty one)."""
    return [
        (key.strip(), value.strip())
        for key, _, value in (line.partition("=") for line in text.splitlines())
        if _ and not key.startswith("#")
    ]


def instance_environment(worker: str) -> dict[str, str]:
    """The drop-in's Environment= variables for one instance, specifiers resolved."""
    specifiers = {"%i": worker, "%S": "/var/lib", "%C": "/var/cache"}
    specifiers["%d"] = f"/run/credentials/nostr-browserd@{worker}.service"
    env = {}
    for key, value in assignments(DROP_IN.read_text()):
        if key == "Environment":
            for word in value.split():
                for spec, resolved in specifiers.items():
                    word = word.replace(spec, resolved)
                name, _, val = word.partition("=")
                env[name] = val
    return env


def test_unit_is_hardened_notify_service():
    d = directives(UNIT.read_text())
    assert d["Type"] == "notify" and int(d["WatchdogSec"]) > 0
    # SIGTERM to the daemon alone: to the whole group it stops Chromium under the drain.
    assert d["KillSignal"] == "SIGTERM" and d["KillMode"] == "mixed"
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


def installed(tmp_path: Path, as_template: bool) -> Path:
    """The unit as installed (alone, or as the template with its drop-in, as the drop-in's
    header says), ExecStart pointing at this checkout's console script (verify checks that
    it exists); returns the path to analyze: the unit, or an instance of the template."""
    exe = REPO / ".venv" / "bin" / "nostr-browserd"
    if not exe.exists():
        exe = Path(shutil.which("nostr-browserd") or "/bin/true")
    files = [(UNIT, tmp_path / "nostr-browserd.service")]
    if as_template:
        (tmp_path / DROP_IN.parent.name).mkdir()
        files = [
            (UNIT, tmp_path / "nostr-browserd@.service"),
            (DROP_IN, tmp_path / DROP_IN.parent.name / DROP_IN.name),
        ]
    for source, target in files:
        target.write_text(source.read_text().replace("/usr/local/bin/nostr-browserd", str(exe)))
    return tmp_path / ("nostr-browserd@worker-1.service" if as_template else UNIT.name)


def exposure(unit: Path) -> float:
    """``systemd-analyze security``'s overall level; the unit (and drop-in) must parse whole."""
    proc = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "nostr-browserd" not in proc.stderr, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "Overall exposure level" in x)
    return float(line.split(":")[1].split()[0])


@pytest.fixture
def systemd_analyze() -> None:
    """systemd-analyze is there (Debian's systemd; .ci/run and setup.sh install it)."""
    if shutil.which("systemd-analyze") is None:
        missing("systemd-analyze not installed: apt-get install systemd")


@pytest.mark.parametrize("as_template", [False, True], ids=["unit", "template-instance"])
def test_systemd_analyze_verify(systemd_analyze, tmp_path, as_template):
    proc = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(installed(tmp_path, as_template))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [
        line
        for line in proc.stderr.splitlines()
        if "nostr-browserd" in line or "Unknown" in line or "Failed" in line
    ]
    assert proc.returncode == 0 and not problems, proc.stderr


def test_exposure_is_at_most_2_5_and_no_more_for_a_worker(systemd_analyze, tmp_path):
    unit = exposure(UNIT)
    assert unit <= 2.5
    assert exposure(installed(tmp_path, as_template=True)) <= unit


def test_the_network_policy_has_a_layer_in_the_unit():
    d = directives(UNIT.read_text())
    denied = d["IPAddressDeny"].split()
    assert {"link-local", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"} <= set(
        denied
    )
    assert "localhost" not in denied and "any" not in denied  # relays, embedded relay, proxy


def test_the_template_is_the_unit_itself_and_its_drop_in_weakens_nothing():
    """One copy of the hardening: the template is the unit installed under its name; the
    drop-in only names the worker, its own directories and user, its credential and its
    start command."""
    install = 'install -C -m 0644 systemd/nostr-browserd.service "$units/nostr-browserd@.service"'
    assert install in (REPO / "scripts" / "install.sh").read_text()
    hardening = set(directives(UNIT.read_text())) - {"Description", "Documentation"}
    worker_keys = {
        "Description",
        "Environment",
        "EnvironmentFile",
        "User",
        "StateDirectory",
        "CacheDirectory",
        "LoadCredential",
        "ExecStart",
    }
    changed = {key for key, _ in assignments(DROP_IN.read_text())}
    assert changed <= worker_keys, changed - worker_keys
    assert not (changed - {"Environment", "StateDirectory", "CacheDirectory"}) & (
        hardening - {"LoadCredential", "ExecStart", "Description"}
    )
    lines = assignments(DROP_IN.read_text())
    for key in ("StateDirectory", "CacheDirectory", "LoadCredential", "ExecStart"):
        values = [value for k, value in lines if k == key]
        assert values[0] == "" and len(values) >= 2, f"{key}: reset first"
    assert ("StateDirectory", "nostr-browserd/%i") in lines
    env = instance_environment("worker-1")
    assert env["NOSTR_BROWSERD_STATE_WORKER"] == "worker-1"
    assert env["NOSTR_BROWSERD_LOCAL_ENABLED"] == "false"  # workers would share the port
    credentials = {value.split(":")[0] for key, value in lines if key == "LoadCredential" and value}
    assert credentials == {"bunker-url", "pgpass"}  # no key on a worker's host
    assert env["PGPASSFILE"] == "/run/credentials/nostr-browserd@worker-1.service/pgpass"


def test_a_workers_config_under_the_template(monkeypatch):
    """deploy/worker.toml with an instance's environment: its own name, state and channel."""
    env = instance_environment("worker-2") | {"NOSTR_BROWSERD_NOSTR_CONTROLLERS": ""}
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/nostr-browserd/worker-2")
    config = load_config(REPO / "deploy" / "worker.toml", env)
    assert config.state.worker == "worker-2"
    state = Path("/var/lib/nostr-browserd/worker-2")
    assert config.state.dir == state and not config.local.enabled
    for key in BROWSER_DIRS:
        assert getattr(config.browser, key).is_relative_to(state), key
    assert config.identity.bunker_url_file == Path(
        "/run/credentials/nostr-browserd@worker-2.service/bunker-url"
    )
