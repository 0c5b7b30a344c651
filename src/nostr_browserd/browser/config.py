"""How the daemon gets its browsers, and the limits every tool obeys: ``[browser]``.

The settings live apart from the session and the pool that read them, so what only needs a
default (the text renderer's result cap) or a launch option (``endpoints.py``) imports no
Playwright session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..errors import BrowserdError, ErrorCode
from .endpoints import check_endpoint

# The real binaries before Debian's /usr/bin wrappers (a shell script in between).
EXECUTABLES = (
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
)


class RecordConfig(BaseModel):
    """``[record]``: the bounds of one recording (record_start, ask --record), and its pace."""

    max_seconds: float = Field(300.0, gt=0, le=3600, description="a recording stops here")
    max_mb: float = Field(50.0, gt=0, le=1024, description="megabytes of video at most")
    fps: int = Field(5, ge=1, le=30, description="frames per second at most")
    max_width: int = Field(1280, ge=320, le=3840, description="pixels; wider pages scale down")


class BrowserConfig(BaseModel):
    """How to get a browser and the limits every tool obeys."""

    executable: str | None = None
    endpoints: list[str] = Field(
        default_factory=list,
        description="browser servers (ws://, wss://) and DevTools endpoints (http://, https://) "
        "to place contexts on, instead of launching Chromium here",
    )
    cdp_endpoint: str | None = Field(None, description="one DevTools endpoint (endpoints)")
    ws_endpoint: str | None = Field(None, description="one browser server (endpoints)")
    egress_host: str | None = Field(
        None,
        description="this machine's name or address as browser servers reach it: the egress "
        "proxy listens there too (a free port, a credential per start) for their contexts",
    )
    egress_connections: int = Field(
        64,
        ge=1,
        description="connections one controller's pages may have open through the egress "
        "proxy at once; past them a connection is answered 503",
    )
    contexts_per_endpoint: int | None = Field(
        None, ge=1, description="contexts (windows) one endpoint may hold; none: no limit"
    )
    context_mb: float = Field(
        17.0, gt=0, description="memory one context costs, for status's estimate (MB)"
    )
    headless: bool = True
    isolation: Literal["per-controller", "shared"] = Field(
        "per-controller", description="a context per controller, or one for everyone"
    )
    allowed_schemes: list[str] = ["http", "https", "about"]
    search_url: str = "https://duckduckgo.com/?q={query}"
    result_cap: int = Field(20_000, ge=1000, description="characters per result")
    binary_cap: int = Field(2_000_000, ge=10_000, description="bytes per binary result")
    download_cap: int = Field(
        100 * 1024 * 1024, ge=1, description="bytes a download may have; stopped past them"
    )
    timeout_ms: int = Field(15_000, ge=100)
    viewport: tuple[int, int] = (1280, 720)
    sandbox: bool = Field(
        True, description="Chromium's own sandbox; false only where it cannot run (as root)"
    )
    block_private_networks: bool | None = Field(
        None,
        description="refuse loopback, LAN and link-local addresses (default: on for DM "
        "controllers, off for the local owner)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="host or host:port reachable despite the block"
    )
    scrape_ca_file: Path | None = Field(
        None, description="a CA bundle scrape trusts instead of the system's (an internal CA)"
    )
    downloads_dir: Path | None = Field(None, description="where download saves, per owner")
    uploads_dir: Path | None = Field(None, description="the only files upload may send")
    state_dir: Path | None = Field(
        None,
        description="recordings, per owner (saved login states live in the state store; files"
        " an older release saved here are moved into it at start)",
    )
    # Set from the file's own [record] section (daemon/config.py), not under [browser].
    record: RecordConfig = Field(default_factory=RecordConfig, exclude=True)

    @field_validator("endpoints", "cdp_endpoint", "ws_endpoint")
    @classmethod
    def _endpoints(cls, value: Any) -> Any:
        for url in [value] if isinstance(value, str) else value or []:
            check_endpoint(url)
        return value

    @model_validator(mode="after")
    def _one_list(self) -> BrowserConfig:
        """``cdp_endpoint`` and ``ws_endpoint`` are older spellings of a one-item list."""
        for url in (self.ws_endpoint, self.cdp_endpoint):
            if url is not None and url not in self.endpoints:
                self.endpoints.append(url)
        return self

    def find_executable(self) -> str:
        """The configured executable, or the first Debian Chromium that exists."""
        if self.executable:
            return self.executable
        for path in EXECUTABLES:
            if Path(path).exists():
                return path
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            "No Chromium found: install chromium-headless-shell or set browser.executable.",
        )
