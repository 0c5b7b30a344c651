"""The config file and its environment overrides: defaults, overrides, and errors that name keys."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.daemon.config import ConfigError, load_config
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip19 import npub_encode, nsec_encode
from tests.fixtures.leaks import LEAKS
from tests.fixtures.paths import REPO

REPO = REPO
PK = public_key_hex(generate_secret())
PK2 = public_key_hex(generate_secret())


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file():
    config = load_config(None, {"HOME": "/home/x"})
    assert config.nostr.dm == ["nip17", "nip04"]
    assert config.nostr.freshness == 600
    assert config.local.port == 17777 and config.local.enabled
    assert config.nostr.uses_embedded_relay
    assert config.identity.method == "local"
    assert config.allowed() == {}


def test_a_file_without_identity_starts_with_none(tmp_path):
    """Issue 15: a config file that names no identity waits for login; no file at all (the
    zero-config run) keeps the generated key, and the environment can still name one."""
    path = tmp_path / "c.toml"
    path.write_text("[nostr]\nembedded_relay = true\n")
    none = load_config(path, {}).identity
    assert none.method == "none" and none.login(tmp_path / "k") is None
    assert load_config(None, {}).identity.method == "local"
    env = {"NOSTR_BROWSERD_IDENTITY_METHOD": "local"}
    assert load_config(path, env).identity.method == "local"


def test_state_dir_prefers_systemd_then_xdg(monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/nostr-browserd")
    assert load_config(None, {}).state.dir == Path("/var/lib/nostr-browserd")
    monkeypatch.delenv("STATE_DIRECTORY")
    monkeypatch.setenv("XDG_STATE_HOME", "/x/state")
    assert load_config(None, {}).state.dir == Path("/x/state/nostr-browserd")


def test_file_with_roles_and_approver(tmp_path):
    path = write(
        tmp_path,
        f"""
[nostr]
relays = ["ws://127.0.0.1:1", "ws://127.0.0.1:1"]
controllers = ["{npub_encode(PK)}"]
dm = ["nip17"]

[[controllers]]
pubkey = "{PK2}"
role = ["open", "snapshot"]
approver = "{npub_encode(PK)}"
""",
    )
    config = load_config(path, {})
    assert config.nostr.relays == ["ws://127.0.0.1:1"]  # de-duplicated
    assert not config.nostr.uses_embedded_relay
    allowed = config.allowed()
    assert allowed[PK].role == "full"
    assert allowed[PK2].role == ["open", "snapshot"] and allowed[PK2].approver == PK


def test_env_overrides_every_kind_of_value(tmp_path):
    path = write(tmp_path, '[nostr]\nrelays = ["ws://a.example"]\n')
    config = load_config(
        path,
        {
            "NOSTR_BROWSERD_NOSTR_RELAYS": "ws://b.example, ws://c.example",
            "NOSTR_BROWSERD_NOSTR_CONTROLLERS": f'["{npub_encode(PK)}"]',
            "NOSTR_BROWSERD_NOSTR_FRESHNESS": "30",
            "NOSTR_BROWSERD_LOCAL_ENABLED": "false",
            "NOSTR_BROWSERD_IDENTITY_NSIGNER_DEVICE": "signer-vm",
            "NOSTR_BROWSERD_IDENTITY_NSEC_FILE": "$CREDENTIALS_DIRECTORY/nsec",
            "CREDENTIALS_DIRECTORY": "/run/credentials/x",
        },
    )
    assert config.nostr.relays == ["ws://b.example", "ws://c.example"]
    assert list(config.allowed()) == [PK]
    assert config.nostr.freshness == 30
    assert config.local.enabled is False
    assert config.identity.nsigner.device == "signer-vm"
    assert config.identity.nsec_file == Path("/run/credentials/x/nsec")


def test_browser_section_is_the_tool_layers_config(tmp_path):
    text = '[browser]\ncdp_endpoint = "http://127.0.0.1:9222"\nresult_cap = 5000\n'
    config = load_config(
        write(tmp_path, text),
        {
            "NOSTR_BROWSERD_BROWSER_TIMEOUT_MS": "4000",
            "NOSTR_BROWSERD_BROWSER_DOWNLOADS_DIR": "$STATE_DIRECTORY/dl",
            "NOSTR_BROWSERD_BROWSER_QUEUE_SIZE": "3",
            "STATE_DIRECTORY": "/var/lib/x",
        },
    )
    browser = config.browser
    assert isinstance(browser, BrowserConfig)  # handed to the browser pool as it is
    assert browser.cdp_endpoint == "http://127.0.0.1:9222" and browser.result_cap == 5000
    assert browser.timeout_ms == 4000 and browser.queue_size == 3
    assert browser.downloads_dir == Path("/var/lib/x/dl")


def test_browser_dirs_default_under_the_state_dir(tmp_path):
    config = load_config(write(tmp_path, f'[state]\ndir = "{tmp_path}/s"\n'), {})
    assert config.browser.state_dir == tmp_path / "s/browser"
    assert config.browser.downloads_dir == tmp_path / "s/downloads"
    assert config.browser.uploads_dir == tmp_path / "s/uploads"


def test_monitors_section_defaults_and_environment():
    monitors = load_config(None, {}).monitors
    assert (monitors.min_interval, monitors.max_per_controller) == (60, 20)
    assert (monitors.failures_before_notice, monitors.timezone) == (3, "UTC")
    env = {"NOSTR_BROWSERD_MONITORS_TIMEZONE": "Europe/Paris"}
    assert load_config(None, env).monitors.timezone == "Europe/Paris"


def test_isolation_has_one_spelling(tmp_path):
    assert load_config(None, {}).browser.isolation == BrowserConfig().isolation == "per-controller"
    shared = load_config(None, {"NOSTR_BROWSERD_BROWSER_ISOLATION": "shared"})
    assert shared.browser.isolation == "shared"
    with pytest.raises(ConfigError, match=r"browser\.isolation"):
        load_config(write(tmp_path, '[browser]\nisolation = "owner"\n'), {})
    with pytest.raises(ValidationError):
        BrowserConfig(isolation="owner")


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("[browser]\nresult_capp = 1\n", {}, "browser.result_capp: Extra inputs"),
        ("", {"NOSTR_BROWSERD_BROWSER_HEADLES": "0"}, "NOSTR_BROWSERD_BROWSER_HEADLES: no such"),
        ("[browser]\nresult_cap = 10\n", {}, "NOSTR_BROWSERD_BROWSER_RESULT_CAP"),
        ("[nostr]\nfreshness = -5\n", {}, "nostr.freshness"),
        ('[nostr]\nrelays = ["https://x"]\n', {}, "must start with ws://"),
        ('[nostr]\ndm = ["nip99"]\n', {}, "nostr.dm[0]"),
        ("[nostr]\nfreshnes = 5\n", {}, "nostr.freshnes"),
        ('[identity]\nmethod = "seed"\n', {}, "needs identity.seed_file"),
        ('[identity]\nmethod = "readonly"\nnpub = "nope"\n', {}, "identity"),
        ('[[controllers]]\npubkey = "x"\nrole = []\n', {}, "controllers[0]"),
        ("[local]\nport = 70000\n", {}, "NOSTR_BROWSERD_LOCAL_PORT"),
        ("", {"NOSTR_BROWSERD_NOSTR_NOPE": "1"}, "NOSTR_BROWSERD_NOSTR_NOPE: no such setting"),
        ("", {"NOSTR_BROWSERD_BOGUS_X": "1"}, "NOSTR_BROWSERD_BOGUS_X: no such setting"),
        ("[nostr\n", {}, "not valid TOML"),
        ('[monitors]\ntimezone = "Mars/Olympus"\n', {}, "monitors.timezone: 'Mars/Olympus'"),
        ("[monitors]\nmin_interval = 0\n", {}, "NOSTR_BROWSERD_MONITORS_MIN_INTERVAL"),
    ],
)
def test_errors_name_the_key(tmp_path, text, env, expected):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), env)
    assert expected in str(info.value)


def test_a_secret_in_the_wrong_place_is_not_echoed(tmp_path):
    nsec = nsec_encode(generate_secret())
    path = write(tmp_path, f'[nostr]\ncontrollers = ["{nsec}"]\n')
    LEAKS.holder(path)  # the input that holds it
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert "nostr.controllers" in str(info.value) and nsec not in str(info.value)


def test_the_same_controller_twice_is_an_error(tmp_path):
    text = f'[nostr]\ncontrollers = ["{PK}"]\n[[controllers]]\npubkey = "{npub_encode(PK)}"\n'
    with pytest.raises(ConfigError, match="listed twice"):
        load_config(write(tmp_path, text), {})


def test_missing_file():
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(Path("/nonexistent/config.toml"), {})


def test_example_config_is_valid():
    config = load_config(REPO / "systemd/config.example.toml", {"CREDENTIALS_DIRECTORY": "/c"})
    assert config.identity.nsec_file == Path("/c/nsec")
    assert config.nostr.relays and config.nostr.discovery_relays


def test_one_key_source_at_most(tmp_path):
    text = '[identity]\nnsec_file = "/k"\nnsec_env = "K"\n'
    with pytest.raises(ConfigError, match=r"give exactly one of nsec, nsec_file, nsec_env"):
        load_config(write(tmp_path, text), {})


def test_refused_at_load_naming_the_key_self_approval_and_freshness(tmp_path):
    path = write(
        tmp_path,
        f"""
[[controllers]]
pubkey = "{npub_encode(PK)}"
approver = "{PK}"
""",
    )
    with pytest.raises(ConfigError) as err:
        load_config(path, {})
    assert "controllers[0]" in str(err.value) and "approver" in str(err.value)
    assert "own key" in str(err.value)
    env = {"NOSTR_BROWSERD_NOSTR_FRESHNESS": "7200", "NOSTR_BROWSERD_STATE_SEEN_RETENTION": "3600"}
    with pytest.raises(ConfigError) as err:
        load_config(None, env)
    assert "nostr.freshness" in str(err.value) and "state.seen_retention" in str(err.value)
    assert load_config(None, {**env, "NOSTR_BROWSERD_NOSTR_FRESHNESS": "3600"})


def test_the_local_token_comes_from_a_file_a_credential_or_the_state_dir(tmp_path, monkeypatch):
    state = tmp_path / "state"
    default = load_config(None, {"NOSTR_BROWSERD_STATE_DIR": str(state)})
    assert default.local.generated
    assert default.local.token_path(state) == state / "local-token"
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", "/run/credentials/x")
    credential = load_config(write(tmp_path, '[local]\ncredential = "local-token"\n'), {})
    assert not credential.local.generated
    assert credential.local.token_path(state) == Path("/run/credentials/x/local-token")
    text = '[local]\ncredential = "t"\ntoken_file = "/t"\n'
    with pytest.raises(ConfigError, match=r"local\.token_file or local\.credential, not both"):
        load_config(write(tmp_path, text), {})


@pytest.mark.parametrize("where", ["s", "s/browser", "s/downloads/x", ".", "/"])
def test_uploads_never_reach_the_state_directory(tmp_path, where):
    env = {"NOSTR_BROWSERD_STATE_DIR": str(tmp_path / "s")}
    text = f'[browser]\nuploads_dir = "{(tmp_path / where).resolve()}"\n'
    with pytest.raises(ConfigError, match=r"browser\.uploads_dir .* must not be the state"):
        load_config(write(tmp_path, text), env)
    assert load_config(None, env).browser.uploads_dir == tmp_path / "s" / "uploads"
    elsewhere = write(tmp_path, f'[browser]\nuploads_dir = "{tmp_path / "up"}"\n')
    assert load_config(elsewhere, env).browser.uploads_dir == tmp_path / "up"


def test_a_vault_fill_cannot_be_auto_approved(tmp_path):
    """The model picks the field a vault value goes into, and a page's text can steer it."""
    for tool in ("fill_credential", "login_with"):
        text = f'[[controllers]]\npubkey = "{PK}"\n[controllers.ask]\nauto_approve = ["{tool}"]\n'
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text), {})
        assert f"{tool} cannot be auto-approved" in str(info.value)
        assert "a person always reads where it goes" in str(info.value)
    fine = f'[[controllers]]\npubkey = "{PK}"\n[controllers.ask]\nauto_approve = ["open"]\n'
    assert load_config(write(tmp_path, fine), {}).controllers[0].ask.auto_approve == ["open"]
