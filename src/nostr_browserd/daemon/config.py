"""The daemon's configuration: one TOML file, every key overridable from the environment.

Sections: ``[identity]`` (how the daemon logs in), ``[nostr]`` (relays, allow-list, accepted DM
schemes), ``[[controllers]]`` (allow-list entries with a role and an optional approver),
``[browser]`` (every key of the tool layer's ``BrowserConfig``, plus queue limits), ``[state]``,
``[local]`` (the loopback control channel), ``[ask]`` (the model loop), ``[files]`` (files
in private chats) and ``[monitors]`` (page monitors and scheduled commands).

Any key can be overridden by ``NOSTR_BROWSERD_<SECTION>_<KEY>`` (``NOSTR_BROWSERD_NOSTR_RELAYS``,
``NOSTR_BROWSERD_IDENTITY_NSIGNER_DEVICE``); the value is read as a TOML value when it parses as
one (``'["wss://a", "wss://b"]'``, ``600``, ``false``), else as a plain string, and a list key also
accepts ``a,b,c``.  Errors name the key (and the variable or file it came from) and what is wrong,
never the value: a misplaced secret must not end up in a log.
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..browser.config import BrowserConfig, RecordConfig
from ..browser.quota import FREE_MB, QUOTA_MB, RECEIVED_KEEP, FileQuota
from ..dm.inbox import STRANGER_BUDGET
from ..dm.messages import Scheme
from ..files.blossom import server_address
from ..login.files import credential_path
from ..login.nsigner import DEFAULT_BINARY
from ..login.params import LOGIN_MODELS, LoginMethod, LoginParams
from ..nostr.nip19 import parse_pubkey
from .config_error import ConfigError as ConfigError  # re-exported: the loader raises it
from .keyfile import DEFAULT_TOKEN_FILE
from .ports import DEFAULT_EMBEDDED_RELAY_PORT, DEFAULT_LOCAL_PORT

ENV_PREFIX = "NOSTR_BROWSERD_"

# The browser's file directories and, when unset, where they go under the state directory.
BROWSER_DIRS = {"state_dir": "browser", "downloads_dir": "downloads", "uploads_dir": "uploads"}

Role = Literal["full", "read"] | list[str]


class Section(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid")


def _expand_path(value: Any, info: ValidationInfo) -> Any:
    """``~`` and ``$VARS`` (``$CREDENTIALS_DIRECTORY``, ``$STATE_DIRECTORY``) in file paths."""
    if not isinstance(value, str) or not value:
        return value
    environ = (info.context or {}).get("environ", os.environ)
    expanded = re.sub(
        r"\$(\w+)|\$\{(\w+)\}",
        lambda m: environ.get(m[1] or m[2], m[0]),
        os.path.expanduser(value),
    )
    if "$" in expanded:
        raise ValueError(f"{value!r} names an environment variable that is not set")
    return Path(expanded)


FilePath = Path | None


class NsignerConfig(Section):
    """An n_signer reached over Qubes qrexec."""

    transport: Literal["qrexec"] = "qrexec"
    device: str = "nostr_signer"
    service: str = "qubes.NsignerRpc"
    index: int = Field(default=0, ge=0)
    binary: str = DEFAULT_BINARY  # the program run: configuration, never a login parameter


class IdentityConfig(Section):
    """Who the daemon is; key material is referenced by file (``$CREDENTIALS_DIRECTORY`` works).

    ``method = "none"`` starts with no identity: an agent logs in on the local channel.
    """

    method: Literal["none", "local", "seed", "readonly", "nip46", "nsigner"] = "local"
    nsec_file: FilePath = None
    nsec_env: str | None = None
    credential: str | None = None
    seed_file: FilePath = None
    passphrase_file: FilePath = None
    account: int = Field(default=0, ge=0)
    npub: str | None = None
    bunker_url: str | None = None
    bunker_url_file: FilePath = None  # the URL holds the pairing secret: keep it in a 0600 file
    nsigner: NsignerConfig = Field(default_factory=NsignerConfig)

    _paths = field_validator(
        "nsec_file", "seed_file", "passphrase_file", "bunker_url_file", mode="before"
    )(_expand_path)

    @model_validator(mode="after")
    def _method_has_its_fields(self) -> IdentityConfig:
        needs = {"seed": "seed_file", "readonly": "npub"}
        field = needs.get(self.method)
        if self.method == "nip46" and bool(self.bunker_url) == bool(self.bunker_url_file):
            raise ValueError(
                "method 'nip46' needs one of identity.bunker_url_file (a 0600 file with the "
                "bunker:// URL) and identity.bunker_url"
            )
        if field and getattr(self, field) in (None, ""):
            raise ValueError(f"method {self.method!r} needs identity.{field}")
        if self.method == "readonly":
            self.npub = parse_pubkey(self.npub or "")
        try:  # the login tools' own rules (one key source…), not a copy of them
            self.login(Path("identity.nsec"))
        except ValidationError as exc:
            messages = (e["msg"].removeprefix("Value error, ") for e in exc.errors())
            raise ValueError("; ".join(messages)) from None
        return self

    def login(self, default_key: Path) -> LoginMethod | None:
        """This section as the ``login`` tool's params: the same model, the same rules.

        A local identity that names no key uses ``default_key``; ``none`` gives None.
        """
        if self.method == "none":
            return None
        model = LOGIN_MODELS[self.method]
        given = self.model_dump(exclude={"nsigner"}, exclude_none=True)
        if self.method == "nsigner":
            given |= self.nsigner.model_dump()
        fields = {k: v for k, v in given.items() if k in model.model_fields}
        if fields == {"method": "local"}:
            fields["nsec_file"] = default_key
        return LoginParams.model_validate(fields).root


def _pubkey(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a public key (npub1… or 64 hex characters)")
    return parse_pubkey(value)


# Tools that put a value of the vault into a page: the model chooses the field, and a page's
# text can steer that choice, so a person always reads where the value goes (docs/ask.md).
NEVER_AUTO_APPROVED = ("fill_credential", "login_with")


class ControllerAsk(Section):
    """``[controllers.ask]``: this controller's gated tools that ``ask`` may run unasked."""

    auto_approve: list[str] = Field(default_factory=list)
    record: bool = Field(False, description="every ask turn as if --record: its replay comes too")

    @field_validator("auto_approve")
    @classmethod
    def _no_vault_tools(cls, names: list[str]) -> list[str]:
        vault = [name for name in names if name in NEVER_AUTO_APPROVED]
        if vault:
            raise ValueError(
                f"{', '.join(vault)} cannot be auto-approved: they put a value of the vault "
                "into the field the model chose, and a page's text can steer that choice, so "
                "a person always reads where it goes; remove them from auto_approve"
            )
        return names


class ControllerConfig(Section):
    """One allow-listed key: what it may run, and whose approval its gated commands need."""

    pubkey: str
    name: str = ""
    role: Role = "full"
    approver: str | None = None
    approval_timeout: float = Field(default=120.0, gt=0)
    ask: ControllerAsk = Field(default_factory=ControllerAsk)

    _keys = field_validator("pubkey", "approver", mode="before")(
        lambda v: None if v is None else _pubkey(v)
    )

    @field_validator("role")
    @classmethod
    def _role_not_empty(cls, role: Role) -> Role:
        if isinstance(role, list) and not role:
            raise ValueError('an explicit tool list must name at least one tool (or use "read")')
        return role

    @model_validator(mode="after")
    def _not_its_own_approver(self) -> ControllerConfig:
        if self.approver == self.pubkey:
            raise ValueError(
                "approver is the controller's own key: it would approve its own commands;"
                " name another key, or remove approver"
            )
        return self


class NostrConfig(Section):
    """Relays, the plain allow-list, and what the daemon says about itself."""

    relays: list[str] = Field(default_factory=list)
    discovery_relays: list[str] = Field(default_factory=list)
    embedded_relay: bool | None = None
    embedded_relay_port: int = Field(default=DEFAULT_EMBEDDED_RELAY_PORT, ge=0, le=65535)
    controllers: list[str] = Field(default_factory=list)
    dm: list[Scheme] = Field(default=["nip17", "nip04"], min_length=1)
    freshness: float = Field(default=600.0, gt=0)
    name: str = "nostr-browserd"
    about: str = "A headless browser driven over encrypted direct messages."
    publish_timeout: float = Field(default=10.0, gt=0)
    stranger_budget: int = Field(default=STRANGER_BUDGET, ge=1)

    _pubkeys = field_validator("controllers", mode="before")(
        lambda v: [_pubkey(x) for x in v] if isinstance(v, list) else v
    )

    @field_validator("relays", "discovery_relays")
    @classmethod
    def _relay_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not url.startswith(("ws://", "wss://")):
                raise ValueError(f"relay {url!r} must start with ws:// or wss://")
        return list(dict.fromkeys(urls))

    @property
    def uses_embedded_relay(self) -> bool:
        """Explicit setting, else on exactly when no relay is configured."""
        return not self.relays if self.embedded_relay is None else self.embedded_relay


class ContextVmConfig(Section):
    """MCP over Nostr (ContextVM): on the ``[nostr]`` relays, for the same allow-list.

    ``announce`` publishes kinds 11316 and 11317 (name, about, picture, website and the tool
    list, signed by the daemon's key): off, since an allow-listed daemon has no reason to be
    found by strangers.
    """

    enabled: bool = True
    announce: bool = False
    picture: str = ""
    website: str = ""


class BrowserSection(BrowserConfig):
    """The tool layer's ``BrowserConfig`` (every key of it), plus the daemon's queue limits.

    Extending it rather than restating it keeps one definition of each browser key; the
    section is handed to the browser pool as it is.
    """

    model_config = ConfigDict(extra="forbid")

    command_timeout: float = Field(default=60.0, gt=0)
    queue_size: int = Field(default=16, ge=1)

    _paths = field_validator(*BROWSER_DIRS, mode="before")(_expand_path)


def make_browser_dirs(browser: BrowserSection) -> None:
    """Create the saved-login, downloads and uploads directories (0700) before any command.

    A directory that cannot be created (outside its ``StateDirectory`` under systemd's
    ``ProtectSystem=strict``) stops the start with the key to fix, not a failing command.
    """
    for key in BROWSER_DIRS:
        path = getattr(browser, key)
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ConfigError(f"browser.{key}: cannot create {path}: {exc.strerror}") from None


def file_quota(config: Config) -> FileQuota:
    """Each controller's files held to ``[files]``'s limits, in ``[browser]``'s directories."""
    files = config.files
    return FileQuota(config.browser, files.quota_mb, files.free_mb, files.received_keep)


def default_state_dir() -> Path:
    """``$STATE_DIRECTORY`` (systemd), else ``$XDG_STATE_HOME/nostr-browserd``, else ~/.local."""
    if os.environ.get("STATE_DIRECTORY"):
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(xdg) / "nostr-browserd"


class StateConfig(Section):
    """Where seen ids, the audit log, the generated key and browser state live."""

    dir: Path = Field(default_factory=default_state_dir)
    seen_retention: float = Field(default=3 * 86400.0, gt=0)
    rejected_max_ids: int = Field(default=100_000, ge=1)
    audit_retention: float = Field(default=90 * 86400.0, gt=0)
    audit_max_rows: int = Field(default=100_000, ge=1)
    # A PostgreSQL URL moves the store there (several daemons can share it); None: SQLite.
    database: str | None = None
    # This worker's name among those sharing the database (each its own), and how long a
    # controller stays leased to a worker that stopped renewing (a dead one), in seconds.
    worker: str = Field(default_factory=socket.gethostname, min_length=1, max_length=64)
    lease: float = Field(default=15.0, ge=1.0, le=3600.0)

    _path = field_validator("dir", mode="before")(_expand_path)

    @field_validator("database")
    @classmethod
    def _postgresql_url(cls, value: str | None) -> str | None:
        """Refuse anything but a readable ``postgresql://`` URL, never echoing it (a password)."""
        if value is None:
            return None
        from psycopg.conninfo import conninfo_to_dict

        example = "postgresql://user@host:5432/dbname"
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"must be a PostgreSQL URL such as {example}")
        try:
            conninfo_to_dict(value)
        except Exception:  # psycopg's message may quote the URL, password included
            raise ValueError(f"is not a valid PostgreSQL URL (expected {example})") from None
        return value


class LocalConfig(Section):
    """The loopback WebSocket control channel (``ws://127.0.0.1:<port>/agent``).

    It always needs a bearer token: from ``token_file``, from the systemd credential
    ``credential``, or else one generated once into the state directory.
    """

    enabled: bool = True
    port: int = Field(default=DEFAULT_LOCAL_PORT, ge=0, le=65535)
    token_file: FilePath = None
    credential: str | None = None

    _path = field_validator("token_file", mode="before")(_expand_path)

    @model_validator(mode="after")
    def _one_token_source(self) -> LocalConfig:
        if self.token_file is not None and self.credential is not None:
            raise ValueError("give local.token_file or local.credential, not both")
        return self

    def token_path(self, state_dir: Path) -> Path:
        """Where the token is: the configured file or credential, else ``<state>/local-token``."""
        if self.token_file is not None:
            return self.token_file
        if self.credential is not None:
            return credential_path(self.credential)
        return state_dir / DEFAULT_TOKEN_FILE

    @property
    def generated(self) -> bool:
        """Whether the token is ours to generate (nothing configured)."""
        return self.token_file is None and self.credential is None


class ProviderConfig(Section):
    """``[ask.<provider>]``: where the provider is and which model (defaults: the SDK's URL)."""

    base_url: str | None = None
    model: str | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with https:// (or http:// on loopback)")
        return url


class AskConfig(Section):
    """``[ask]``: the model loop of ``ask`` (the keys are in the key store, never here)."""

    provider: Literal["anthropic", "openai", "openrouter"] = "anthropic"
    max_tool_calls: int = Field(default=12, ge=1, le=100)
    tools: list[str] | None = None
    progress_interval: float = Field(default=3.0, ge=0)
    timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    max_tokens: int = Field(default=4096, ge=64)
    # How long a turn the model handed to the person waits for ``resume`` (then it ends).
    handoff_timeout: float = Field(default=600.0, gt=0)
    anthropic: ProviderConfig = Field(default_factory=ProviderConfig)
    openai: ProviderConfig = Field(default_factory=ProviderConfig)
    openrouter: ProviderConfig = Field(default_factory=ProviderConfig)


class FilesConfig(Section):
    """``[files]``: files in private chats (NIP-17 kind 15 on Blossom servers), and what each
    controller's files may take of the daemon's disk (``browser.quota``)."""

    blossom_servers: list[str] = Field(default_factory=list)
    keep: float = Field(default=86400.0, gt=0)
    max_mb: float = Field(default=20.0, gt=0)
    # Each controller's files on the daemon's disk (sent in, downloaded, recorded), the room
    # every file leaves free for the state store, and how long a file sent in is kept.
    quota_mb: float = Field(default=QUOTA_MB, gt=0)
    free_mb: float = Field(default=FREE_MB, ge=0)
    received_keep: float = Field(default=RECEIVED_KEEP, gt=0)

    @field_validator("blossom_servers")
    @classmethod
    def _server_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not server_address(url):
                raise ValueError(
                    f"blossom server {url!r} must start with https:// (http:// only on loopback)"
                )
        return list(dict.fromkeys(url.rstrip("/") for url in urls))


class MonitorsConfig(Section):
    """``[monitors]``: page monitors and scheduled commands (``daemon/schedule``).

    ``min_interval`` (whole seconds) and ``max_per_controller`` bound monitors and schedules
    together; ``concurrency`` is how many checks run at once in this daemon; ``timezone`` is
    where ``daily``, ``weekdays`` and cron times are read (``schedule add --tz`` overrides).
    """

    min_interval: int = Field(default=60, ge=1)
    max_per_controller: int = Field(default=20, ge=0)
    failures_before_notice: int = Field(default=3, ge=1)
    concurrency: int = Field(default=4, ge=1)
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{name!r} is not a time zone: write Area/City, such as Europe/Paris"
            ) from None
        return name


class Config(Section):
    """The whole file."""

    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    nostr: NostrConfig = Field(default_factory=NostrConfig)
    contextvm: ContextVmConfig = Field(default_factory=ContextVmConfig)
    controllers: list[ControllerConfig] = Field(default_factory=list)
    browser: BrowserSection = Field(default_factory=BrowserSection)
    state: StateConfig = Field(default_factory=StateConfig)
    local: LocalConfig = Field(default_factory=LocalConfig)
    ask: AskConfig = Field(default_factory=AskConfig)
    files: FilesConfig = Field(default_factory=FilesConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)
    monitors: MonitorsConfig = Field(default_factory=MonitorsConfig)

    @model_validator(mode="after")
    def _record_bounds_reach_the_browser(self) -> Config:
        """The tools read ``[record]`` from the browser's settings, as every other bound."""
        self.browser.record = self.record
        return self

    @model_validator(mode="after")
    def _browser_dirs_under_state(self) -> Config:
        """Saved logins, downloads and uploads default to subdirectories of ``state.dir``."""
        for key, subdir in BROWSER_DIRS.items():
            if getattr(self.browser, key) is None:
                setattr(self.browser, key, self.state.dir / subdir)
        return self

    @model_validator(mode="after")
    def _replays_stay_refused(self) -> Config:
        """A command stays refused as stale for as long as it would no longer be seen."""
        if self.nostr.freshness > self.state.seen_retention:
            raise ValueError(
                f"nostr.freshness ({self.nostr.freshness:g} s) is longer than"
                f" state.seen_retention ({self.state.seen_retention:g} s): a command replayed"
                " after its id was forgotten would run again; shorten the first or lengthen"
                " the second"
            )
        return self

    @model_validator(mode="after")
    def _uploads_away_from_the_state(self) -> Config:
        """An upload sends a file to a web page: never the daemon's keys or databases."""
        uploads = Path(self.browser.uploads_dir or "").resolve()
        state = self.state.dir.resolve()
        if uploads != state / BROWSER_DIRS["uploads_dir"] and (
            uploads.is_relative_to(state) or state.is_relative_to(uploads)
        ):
            raise ValueError(
                f"browser.uploads_dir {uploads} must not be the state directory {state}, inside "
                "it (other than its own uploads/) or above it: an upload could send the "
                "daemon's keys and databases to a web page"
            )
        return self

    @model_validator(mode="after")
    def _one_entry_per_key(self) -> Config:
        seen: set[str] = set()
        for pubkey in [*self.nostr.controllers, *(c.pubkey for c in self.controllers)]:
            if pubkey in seen:
                raise ValueError(f"controller {pubkey} is listed twice")
            seen.add(pubkey)
        return self

    def allowed(self) -> dict[str, ControllerConfig]:
        """Every allow-listed key (hex) → its entry; a plain ``nostr.controllers`` key is full."""
        entries = {pk: ControllerConfig(pubkey=pk) for pk in self.nostr.controllers}
        entries.update({c.pubkey: c for c in self.controllers})
        return entries


# --- loading -------------------------------------------------------------------------------


def _env_value(raw: str, is_list: bool) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        if is_list:
            return [part.strip() for part in raw.split(",") if part.strip()]
        return raw


def _is_list_field(model: type[BaseModel], key: str) -> bool:
    annotation = model.model_fields[key].annotation
    return any(get_origin(t) is list for t in (annotation, *get_args(annotation)))


def _nested_model(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    annotation = model.model_fields[key].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _place(model: type[BaseModel], words: str, raw: str, target: dict[str, Any]) -> bool:
    """Put an env override at the field named by ``words`` (underscores are ambiguous)."""
    if words in model.model_fields:
        target[words] = _env_value(raw, _is_list_field(model, words))
        return True
    for name in model.model_fields:
        nested = _nested_model(model, name)
        if nested and words.startswith(name + "_"):
            sub = target.setdefault(name, {})
            if isinstance(sub, dict):
                return _place(nested, words[len(name) + 1 :], raw, sub)
    return False


def apply_env(data: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    """Overlay ``NOSTR_BROWSERD_<SECTION>_<KEY>`` variables onto the file's data."""
    for var, raw in sorted(environ.items()):
        if not var.startswith(ENV_PREFIX):
            continue
        words = var[len(ENV_PREFIX) :].lower()
        section = next((s for s in Config.model_fields if words.startswith(s + "_")), None)
        if section == "controllers" or section is None:
            raise ConfigError(
                f"{var}: no such setting (sections: identity, nostr, contextvm, browser, state,"
                " local, ask, files, monitors; [[controllers]] entries can only be set in the file)"
            )
        model = _nested_model(Config, section)
        assert model is not None
        sub = data.setdefault(section, {})
        if not isinstance(sub, dict) or not _place(model, words[len(section) + 1 :], raw, sub):
            raise ConfigError(f"{var}: no such setting in [{section}]")
    return data


def _describe(exc: ValidationError, origin: str) -> str:
    lines = []
    for err in exc.errors(include_input=False, include_url=False):
        where = ""
        for part in err["loc"]:
            where += f"[{part}]" if isinstance(part, int) else ("." if where else "") + str(part)
        message = err["msg"].removeprefix("Value error, ")
        source = origin
        if err["loc"] and err["loc"][0] != "controllers":
            names = [str(p) for p in err["loc"] if isinstance(p, str)]
            source += " or $" + ENV_PREFIX + "_".join(names).upper()
        lines.append(f"{where or 'config'}: {message} (set in {source})")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def load_config(path: Path | None = None, environ: dict[str, str] | None = None) -> Config:
    """Read ``path`` (or nothing: the embedded defaults), overlay the environment, validate.

    A config file without ``[identity]`` starts with no identity (an agent logs in on the
    local channel); with no file at all the embedded default, a generated key, applies.
    """
    environ = dict(os.environ if environ is None else environ)
    data: dict[str, Any] = {}
    origin = "the defaults"
    if path is not None:
        origin = str(path)
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    data = apply_env(data, environ)
    if path is not None:
        data.setdefault("identity", {"method": "none"})
    try:
        return Config.model_validate(data, context={"environ": environ})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, origin)) from None
