"""The reference deployment (deploy/): no Docker here, so its files are checked against the code.

Every worker's config loads with the daemon's own loader and the environment compose gives it;
every command names a CLI subcommand and options that exist; images are public and pinned to the
Playwright of uv.lock; secrets are 0600 files, never values in the YAML; nothing starts before
what it needs is healthy.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import playwright
import pytest
import yaml
from websockets.asyncio.client import connect

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.daemon.config import load_config
from nostr_browserd.dm.chunks import DEFAULT_PART_BYTES
from nostr_browserd.login.files import read_private_file
from nostr_browserd.login.nsec import signer_from_file
from nostr_browserd.nostr.keys import is_valid_pubkey
from nostr_browserd.nostr.nip01 import now
from nostr_browserd.nostr.nip19 import npub_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.browser import SANDBOX
from tests.fixtures.cluster import CLI, ClusterController, Workers
from tests.fixtures.leaks import LEAKS
from tests.fixtures.lock import locked
from tests.fixtures.paths import REPO
from tests.fixtures.postgres import fresh_database

DEPLOY = REPO / "deploy"
COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
WORKERS = sorted(name for name in SERVICES if name.startswith("worker-"))
PLAYWRIGHT = locked("playwright")
VENV = "/opt/nostr-browserd"  # the install service's venv, shared by the other services


def command(service: dict[str, Any]) -> list[str]:
    """The service's command as words (a healthcheck's CMD is a command too)."""
    cmd = service.get("command", [])
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def our_commands() -> list[list[str]]:
    """Every command in the file: services' commands and healthchecks."""
    found = []
    for service in SERVICES.values():
        test = service.get("healthcheck", {}).get("test", [])
        for words in (command(service), test[1:] if test[:1] == ["CMD"] else []):
            if words:
                found.append(words)
    return found


def worker_environment(name: str, controller: str) -> dict[str, str]:
    """What compose puts in the worker's environment, ${CONTROLLERS} interpolated."""
    env = {k: str(v) for k, v in SERVICES[name]["environment"].items()}
    return {k: re.sub(r"\$\{CONTROLLERS:\?[^}]*\}", controller, v) for k, v in env.items()}


def test_the_demo_relay_is_the_locked_nostr_relay() -> None:
    """The relay service installs its own nostr-relay: the version the suite's relay runs."""
    relay = " ".join(command(SERVICES["relay"]))
    assert re.findall(r"nostr-relay==([\w.]+)", relay) == [locked("nostr-relay")]


def test_the_parts_the_issue_names_with_public_images_only() -> None:
    assert {"postgres", "bunker", "relay", "browsers-1", "browsers-2"} <= set(SERVICES)
    assert WORKERS == ["worker-1", "worker-2", "worker-3"]
    for name, service in SERVICES.items():
        assert "build" not in service, f"{name}: an image of our own would have to be published"
        image = service["image"]
        assert re.fullmatch(
            r"postgres:\d+|python:3\.11-slim|mcr\.microsoft\.com/playwright:v[\d.]+-noble", image
        ), f"{name}: {image}"


def test_the_browser_servers_run_the_locked_playwright() -> None:
    """A Playwright client refuses a server of another version: the servers run the driver of
    the workers' own Playwright (the shared venv, installed from uv.lock), among the browsers of
    Playwright's image for the locked version."""
    install = " ".join(command(SERVICES["install"]))
    assert "uv sync --quiet --frozen --no-editable" in install
    assert "--require-hashes -r /src/scripts/pins/uv.txt" in install
    assert "pip install" not in install.replace("pip install --no-cache-dir --quiet --require", "")
    assert SERVICES["install"]["image"] == "python:3.11-slim"  # the venv's lib/python3.11
    driver = Path(playwright.__file__).parent.relative_to(sys.prefix) / "driver"
    for name in ("browsers-1", "browsers-2"):
        service = SERVICES[name]
        assert service["image"] == f"mcr.microsoft.com/playwright:v{PLAYWRIGHT}-noble", name
        words = command(service)
        assert words[:3] == [
            f"{VENV}/{driver}/node",
            f"{VENV}/{driver}/package/cli.js",
            "run-server",
        ]
        assert f"venv:{VENV}:ro" in service["volumes"]
        # Without --unsafe the server drops the workers' chromiumSandbox: no sandbox at all.
        assert "--unsafe" in words
        assert (
            service["user"] != "root" and "seccomp=seccomp_profile.json" in service["security_opt"]
        )


def test_pages_reach_the_web_only_through_their_workers_proxy() -> None:
    """run-server --unsafe lets a client name an executable: only workers may be clients.
    The browsers' network has no way out: a page reaches the web through its worker's egress
    proxy (the network policy), listening on an alias that exists on that network only."""
    assert COMPOSE["networks"]["browsers"] == {"internal": True}
    aliases = set()
    for name, service in SERVICES.items():
        networks = service.get("networks", [])
        if name.startswith("browsers-"):
            assert networks == ["browsers"], name
        elif name.startswith("worker-"):
            egress = service["environment"]["NOSTR_BROWSERD_BROWSER_EGRESS_HOST"]
            assert networks == {"backend": {}, "browsers": {"aliases": [egress]}}, name
            aliases.add(egress)
        else:
            assert "browsers" not in networks, name
    assert len(aliases) == len(WORKERS)


def test_the_seccomp_profile_lets_chromium_make_its_sandbox_namespaces() -> None:
    profile = json.loads((DEPLOY / "seccomp_profile.json").read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    allowed = {
        call
        for rule in profile["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
        for call in rule["names"]
    }
    assert {"clone", "unshare", "setns"} <= allowed


def deployment_commands() -> list[list[str]]:
    """The commands in docs/deployment.md's reference deployment (its sh blocks, ``&&`` apart)."""
    page = (DEPLOY.parent / "docs" / "deployment.md").read_text()
    section = page.split("\n## A reference deployment\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            if line.strip() and not line.startswith("#"):
                for part in line.split("&&"):
                    words = shlex.split(part)
                    while words and ("=" in words[0] or words[0] in ("sudo", "-u", "postgres")):
                        words = words[1:]  # VAR=… and sudo -u postgres
                    found.append(words)
    return found


def options_of(program: list[str]) -> set[str]:
    """The long options ``program … --help`` lists."""
    help_text = subprocess.run(
        [*program, "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", help_text))


def test_every_cli_command_and_option_exists() -> None:
    """Each nostr-browserd and playwright invocation, in compose and in docs/deployment.md's
    reference deployment, names a subcommand and options its --help lists; files it names exist."""
    programs = {
        "nostr-browserd": [
            sys.executable,
            "-c",
            "from nostr_browserd.cli.main import main; main()",
        ],
        "playwright": [sys.executable, "-m", "playwright"],
    }
    seen = set()
    for words in our_commands() + deployment_commands():
        if words[0].endswith("/driver/node") and words[1].endswith("/cli.js"):
            words = ["playwright", *words[2:]]  # Playwright's own driver
        program = programs.get(os.path.basename(words[0]))
        if program is None:
            for word in words:
                if word.startswith("deploy/"):
                    assert (DEPLOY.parent / word).exists(), word
            continue
        seen.add((os.path.basename(words[0]), words[1]))
        options = options_of([*program, words[1]])
        for word in words[2:]:
            if word.startswith("--"):
                assert word in options, f"{' '.join(words[:2])} has no option {word}"
    assert {("nostr-browserd", s) for s in ("run", "bunker", "status")} <= seen
    assert ("playwright", "run-server") in seen


def test_secrets_are_files_never_values() -> None:
    for name, spec in COMPOSE["secrets"].items():
        assert set(spec) == {"file"} and spec["file"].startswith("./secrets/"), name
    for name, service in SERVICES.items():
        environment = service.get("environment", {})
        for key, value in environment.items():
            if re.search(r"PASSWORD|SECRET|NSEC|TOKEN", key):
                assert key.endswith("_FILE") and str(value).startswith("/run/secrets/"), (name, key)
        for path in re.findall(r"/run/secrets/(\w+)", " ".join(command(service)) + str(service)):
            assert path in service.get("secrets", []), f"{name} reads {path} it is not given"


def test_init_secrets_writes_every_secret_0600_and_keeps_them(tmp_path) -> None:
    out = tmp_path / "secrets"
    script = DEPLOY / "init-secrets.sh"
    subprocess.run(["sh", str(script), str(out)], check=True, capture_output=True, timeout=60)
    first = {p.name: p.read_text() for p in out.iterdir()}
    assert set(first) == set(COMPOSE["secrets"])
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    subprocess.run(["sh", str(script), str(out)], check=True, capture_output=True, timeout=60)
    assert {p.name: p.read_text() for p in out.iterdir()} == first  # kept, not rotated
    assert is_valid_pubkey(signer_from_file(out / "daemon_key").pubkey)  # the bunker's loader
    password = read_private_file(out / "postgres_password")
    host, port, db, user, pgpass_password = read_private_file(out / "pgpass").split(":")
    assert pgpass_password == password
    url = urlsplit(tomllib.loads((DEPLOY / "worker.toml").read_text())["state"]["database"])
    assert (host, int(port), db, user) == (url.hostname, url.port, url.path[1:], url.username)


async def test_the_demo_relay_takes_a_whole_reply_part(nostr_relay_url) -> None:
    """The tests' nostr-relay runs deploy/relay.yaml: a reply part (up to 24,000 bytes, a
    gift wrap of about 45,000 characters) must pass, beyond nostr-relay's default 4,096."""
    key = KeySigner.generate()
    content = "x" * (DEFAULT_PART_BYTES * 2)
    event = await key.sign_event(
        {"kind": 1059, "content": content, "tags": [["p", key.pubkey]], "created_at": now()}
    )
    async with connect(nostr_relay_url, proxy=None) as relay:
        await relay.send(json.dumps(["EVENT", event]))
        answer = json.loads(await asyncio.wait_for(relay.recv(), 20))
    assert answer[:3] == ["OK", event["id"], True], answer


def test_nothing_starts_before_what_it_needs_is_healthy() -> None:
    for name, service in SERVICES.items():
        for needed, how in service.get("depends_on", {}).items():
            condition = how["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in SERVICES[needed], f"{name} waits on {needed}'s health"
            else:
                assert (needed, condition) == ("install", "service_completed_successfully")
    for name in [*WORKERS, "bunker"]:
        assert "install" in SERVICES[name]["depends_on"]
    for name in WORKERS:
        assert {"postgres", "bunker", "browsers-1", "browsers-2"} <= set(
            SERVICES[name]["depends_on"]
        )
    assert "relay" in SERVICES["bunker"]["depends_on"]


@pytest.mark.parametrize("name", WORKERS)
def test_each_workers_config_loads_with_its_environment(name) -> None:
    controller = KeySigner.generate().pubkey
    config = load_config(DEPLOY / "worker.toml", worker_environment(name, npub_encode(controller)))
    assert config.state.worker == name
    assert config.state.dir == Path("/var/lib/nostr-browserd") / name
    assert list(config.allowed()) == [controller]
    # Same identity everywhere: the file the bunker writes, mounted where the config reads it.
    url_file = config.identity.bunker_url_file
    bunker = command(SERVICES["bunker"])
    assert str(url_file) == bunker[bunker.index("--url-file") + 1]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in SERVICES[name]["volumes"]}
    assert mounts[str(url_file.parent)] in {m.split(":")[0] for m in SERVICES["bunker"]["volumes"]}
    # Every endpoint, relay and the database is a service of this file, on the port it serves.
    for endpoint in config.browser.endpoints:
        where = urlsplit(endpoint)
        served = command(SERVICES[where.hostname])
        assert str(where.port) == served[served.index("--port") + 1], endpoint
    relay_bind = yaml.safe_load((DEPLOY / "relay.yaml").read_text())["gunicorn"]["bind"]
    assert [urlsplit(r).port for r in config.nostr.relays] == [int(relay_bind.split(":")[1])]
    assert {urlsplit(r).hostname for r in config.nostr.relays} == {"relay"}
    database = urlsplit(config.state.database or "")
    assert database.hostname == "postgres" and database.password is None
    assert (
        os.path.basename(SERVICES[name]["environment"]["PGPASSFILE"]) in SERVICES[name]["secrets"]
    )


class DeployedWorkers(Workers):
    """The harness's worker processes, running deploy/worker.toml: the environment does the
    rest, as in compose."""

    def config(self, name: str, home: Path, local_port: int | None) -> dict[str, dict[str, Any]]:
        return tomllib.loads((DEPLOY / "worker.toml").read_text())


def on_this_machine(words: list[str], places: dict[str, str]) -> list[str]:
    """A compose command with its container paths and service addresses replaced."""
    out = []
    for word in words:
        for there, here in places.items():
            word = word.replace(there, here)
        out.append(word)
    return out


@pytest.mark.timeout(300)
async def test_the_parts_start_and_serve_one_identity(
    postgres_dsn, nostr_relay_url, browser_servers, tmp_path
) -> None:
    """The parts, started here from deploy/'s own files: PostgreSQL (Debian's package), a
    Playwright browser server (run-server --unsafe), the bunker with compose's command line
    and init-secrets.sh's files, and two workers on worker.toml with compose's environment;
    only addresses change (loopback for service names).  Each command is answered once,
    signed through the bunker, by one of the workers."""
    secrets_dir = tmp_path / "secrets"
    subprocess.run(["sh", str(DEPLOY / "init-secrets.sh"), str(secrets_dir)], check=True)
    LEAKS.secret(read_private_file(secrets_dir / "bunker_secret"), "the deployment's bunker secret")
    (tmp_path / "bunker").mkdir()
    places = {
        "/opt/nostr-browserd/bin/nostr-browserd": str(CLI),
        **{f"{w}.egress": "127.0.0.1" for w in WORKERS},
        "/run/secrets/": f"{secrets_dir}/",
        "/run/bunker/": f"{tmp_path}/bunker/",
        "ws://relay:6969": nostr_relay_url,
    }
    with (tmp_path / "bunker.log").open("wb") as log:
        bunker = subprocess.Popen(
            on_this_machine(command(SERVICES["bunker"]), places), stdout=log, stderr=log
        )
    server = await browser_servers("run-server")
    controllers = [ClusterController([nostr_relay_url]) for _ in range(2)]
    workers = DeployedWorkers(tmp_path / "workers", [], None, local=False)
    try:
        url_file = tmp_path / "bunker" / "url"
        async with asyncio.timeout(60):
            while not url_file.exists():
                assert bunker.poll() is None, (tmp_path / "bunker.log").read_text()
                await asyncio.sleep(0.1)
        daemon = signer_from_file(secrets_dir / "daemon_key").pubkey
        for controller in controllers:
            await controller.__aenter__()
        allowed = ",".join(npub_encode(c.pubkey) for c in controllers)
        database = fresh_database(postgres_dsn)  # one for both workers
        for name in ("worker-1", "worker-2"):
            environment = {
                key: on_this_machine([value], places)[0]
                for key, value in worker_environment(name, allowed).items()
                if key != "PATH"
            }
            environment |= {
                "NOSTR_BROWSERD_NOSTR_RELAYS": json.dumps([nostr_relay_url]),
                "NOSTR_BROWSERD_BROWSER_ENDPOINTS": json.dumps([server.url]),
                "NOSTR_BROWSERD_STATE_DATABASE": database,
                "NOSTR_BROWSERD_IDENTITY_BUNKER_URL_FILE": str(url_file),
                "NOSTR_BROWSERD_STATE_DIR": str(tmp_path / "workers" / name / "state"),
                "NOSTR_BROWSERD_LOCAL_ENABLED": "false",
                "NOSTR_BROWSERD_BROWSER_EXECUTABLE": BrowserConfig().find_executable(),
                "NOSTR_BROWSERD_BROWSER_SANDBOX": str(SANDBOX).lower(),
            }
            workers.launch(name, environment)
        await asyncio.gather(*(asyncio.to_thread(w.wait_ready) for w in workers.started))
        for round_ in range(2):
            answers = await asyncio.gather(
                *(
                    c.command(daemon, {"id": f"c{i}-{round_}", "tool": "get_url"}, timeout=60)
                    for i, c in enumerate(controllers)
                )
            )
            assert all(a["success"] for a in answers), answers
        for controller in controllers:
            assert await controller.duplicates() == {}
        logs = [w.log.read_text() for w in workers.started]
        for request in ("c0-0", "c0-1", "c1-0", "c1-1"):
            assert sum(log.count(f"command {request} from") for log in logs) == 1, request
        assert (tmp_path / "bunker.log").read_text().count("bunker: client ") == 2
    finally:
        workers.reap()
        for controller in controllers:
            await controller.__aexit__(None, None, None)
        bunker.terminate()
        bunker.wait(20)
        print(workers.tails())
