"""Files in and out: upload from the uploads directory, download into the downloads one.

A command names files, never paths: an upload takes names inside ``uploads_dir/<owner>`` (any
other path, ``..`` or a symlink leading out is FORBIDDEN; one controller never sends another's
files), and a download is saved under ``downloads_dir/<owner>`` and returned as name, size,
sha256 and, when small, its bytes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError
from pydantic import Field, field_validator, model_validator

from ..browser.checks import multi_control, refuse_if_covered
from ..browser.downloads import asked, stream_to_file, watch_download
from ..browser.masked import holds_filled
from ..browser.paths import configured, free_name, inside, owner_dir
from ..browser.session import Session
from ..browser.urls import resolve
from ..commands.params import OptionalTarget, Target
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..http_client import Unreachable

TOOLS = Registry()
MAX_REDIRECTS = 5
FILE_INPUT_JS = """el => el.tagName === 'INPUT' && el.type === 'file'
  ? {multiple: el.multiple, disabled: el.disabled} : null"""
DISPOSITION = re.compile(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)", re.I)


class UploadParams(Target):
    """A file input and the names of files in the uploads directory."""

    files: list[str] = Field(
        min_length=1, max_length=20, description="names inside uploads_dir (text: space-separated)"
    )

    @field_validator("files", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value


@TOOLS.tool(
    "upload",
    family="files",
    gated=True,
    params=UploadParams,
    args=("target", "*files"),
    destructive=True,
)
async def upload(session: Session, params: UploadParams) -> dict[str, Any]:
    """Put files from your uploads directory into a file input; nothing else is reachable."""
    base = owner_dir(configured(session.config.uploads_dir, "uploads_dir", "upload"), session.owner)
    paths = [inside(base, name) for name in params.files]
    locator = await session.locate(**params.target())
    await multi_control(
        locator,
        FILE_INPUT_JS,
        count=len(paths),
        noun="file input",
        item="file",
        other="Not a file input (input type=file).",
    )
    await locator.set_input_files(paths)
    names = await locator.evaluate("el => [...el.files].map(f => f.name)")
    files = [{"name": p.name, "size": p.stat().st_size} for p in paths]
    return {"ok": names == [p.name for p in paths], "files": files}


class DownloadParams(OptionalTarget):
    """An element whose click starts a download, or an address to fetch."""

    url: str | None = Field(None, max_length=2000, description="fetch this address instead")
    content: bool = Field(True, description="return the bytes (base64) when small enough")
    timeout_ms: int | None = Field(None, ge=0, le=120_000, description="default: config")

    @model_validator(mode="after")
    def _one_source(self) -> DownloadParams:
        if self.has_target == (self.url is not None):
            raise ValueError("give a target to click or a url, not both")
        return self


@TOOLS.tool(
    "download",
    family="files",
    gated=True,
    params=DownloadParams,
    args=("target",),
    destructive=True,
    sends=True,  # --url fetches any address
)
async def download(session: Session, params: DownloadParams) -> dict[str, Any]:
    """Save a download (from clicking an element, or from a url) into the downloads directory.

    Returns its name, size and sha256, and its bytes when they fit the binary cap.
    """
    base = configured(session.config.downloads_dir, "downloads_dir", "download")
    directory = owner_dir(base, session.owner)
    timeout = params.timeout_ms or session.config.timeout_ms
    cap = session.config.download_cap
    with session.pool.quota.reserve(session.owner, directory, cap, exact=False) as room:
        if params.url is not None:
            path = await fetch(session, params.url, directory, timeout, room.size, room.over)
        else:
            path = await click_download(session, params, directory, timeout, room.size, room.over)
    data = path.read_bytes()  # at most download_cap: both ways in stop there
    if holds_filled(data, session.windows.values()):
        path.unlink()
        raise BrowserdError(
            ErrorCode.REFUSED,
            "Not kept: the download holds a value filled from the vault, and was deleted.",
        )
    result: dict[str, Any] = {
        "name": path.name,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    if params.content and len(data) <= session.config.binary_cap:
        result["base64"] = base64.b64encode(data).decode("ascii")
    elif params.content:
        result["note"] = "Too large to return; saved in the downloads directory."
    return result


async def click_download(
    session: Session,
    params: DownloadParams,
    directory: Path,
    timeout_ms: int,
    cap: int,
    over: BrowserdError | None,
) -> Path:
    """Click the target and save the download it starts (stopped past ``cap``, with
    ``over``); Playwright's own copy of it is deleted once saved."""
    locator = await session.locate(**params.target())
    await refuse_if_covered(locator)
    try:
        async with session.page.expect_download(timeout=timeout_ms, predicate=asked) as info:
            await locator.click()
        started = await info.value
    except PlaywrightError as exc:
        if "Timeout" not in str(exc):
            raise
        raise BrowserdError(ErrorCode.TIMEOUT, "The click started no download.") from None
    try:
        failure = await watch_download(started, cap, over)
        if failure:
            raise BrowserdError(ErrorCode.NAVIGATION_FAILED, f"The download failed: {failure}.")
        path = free_name(directory, started.suggested_filename)
        try:
            await started.save_as(path)
        except BaseException:
            path.unlink(missing_ok=True)  # a copy a full disk cut short
            raise
        path.chmod(0o600)
        return path
    finally:
        with contextlib.suppress(PlaywrightError):
            await started.delete()


async def fetch(
    session: Session,
    text: str,
    directory: Path,
    timeout_ms: int,
    cap: int,
    over: BrowserdError | None,
) -> Path:
    """GET an http(s) address with the session's cookies, streamed into a file up to ``cap``
    (past it: ``over``, or ``too_large``).

    Redirects are followed here, each hop judged by the network policy like the first (the
    browser's routes do not see this request); an owner under ``block_private_networks``
    connects through the egress proxy, as its pages do.  The whole fetch, hops included,
    ends at ``timeout_ms``, and it holds one of the owner's fetch slots (``BUSY`` when all
    are taken) until it ends.
    """
    config = session.config
    url = resolve(text, config.allowed_schemes, config.search_url)
    deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
    saved: list[Path] = []

    def open_file(headers: dict[str, str]) -> Path:
        named = DISPOSITION.search(headers.get("Content-Disposition", ""))
        name = unquote(named.group(1)) if named else Path(urlsplit(url).path).name
        saved.append(free_name(directory, name))
        return saved[-1]

    async with session.pool.fetches.slot(session.owner):
        for _hop in range(MAX_REDIRECTS + 1):
            if urlsplit(url).scheme not in ("http", "https"):
                raise BrowserdError(ErrorCode.REFUSED, "Only http(s) addresses can be downloaded.")
            await session.reach.refuse_url(url)
            cookies = await session.page.context.cookies(url)
            headers = {"Cookie": "; ".join(f"{c['name']}={c['value']}" for c in cookies)}
            try:
                status, location, _ = await stream_to_file(
                    url,
                    headers if cookies else {},
                    await session.reach.proxy_url(),
                    cap,
                    open_file,
                    deadline,
                    over,
                )
            except Unreachable as exc:
                message = f"Could not fetch {url}: {exc}"
                raise BrowserdError(ErrorCode.NAVIGATION_FAILED, message) from None
            except TimeoutError:
                message = f"The download took over {timeout_ms / 1000:g} s: stopped, nothing kept."
                raise BrowserdError(ErrorCode.TIMEOUT, message) from None
            if not (300 <= status < 400 and location):
                break
            url = urljoin(url, location)
        else:
            raise BrowserdError(ErrorCode.NAVIGATION_FAILED, f"Over {MAX_REDIRECTS} redirects.")
    if not 200 <= status < 300 or not saved:
        raise BrowserdError(ErrorCode.NAVIGATION_FAILED, f"HTTP {status} for {url}.")
    return saved[-1]
