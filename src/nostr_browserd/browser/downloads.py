"""Downloads held to a size cap while they happen, not after: the disk never takes a 1 GB file
to find out it was too big.

Only a download a command asked for is written at all: every other one a page starts (an
``attachment`` response, a scripted ``a.download`` click, a redirect, a click of ``ask``'s) is
cancelled the moment it begins, and what Chromium had written of it deleted
(``refuse_unasked``).  A download the browser makes for ``download`` (a click) is watched as
Chromium writes it and cancelled (the partial file deleted) once it passes the cap; the check
runs every ``WATCH_INTERVAL``, so the file can pass the cap by what arrives in one interval.
Playwright's own copy is deleted once it is saved.  A download by address is streamed here,
chunk by chunk, into an owner-only file that is deleted the moment it passes the cap or its
deadline, and on any failure (a full disk).  The cap a command gets is the smaller of
``download_cap`` and the room its owner has left (``quota.FileQuota``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, Download, Page
from playwright.async_api import Error as PlaywrightError

from ..errors import BrowserdError, ErrorCode
from ..http_client import opened
from .quota import whole_or_gone

WATCH_INTERVAL = 0.02
# The downloads a command asked for (``asked``), by Playwright's own object of each.
_ASKED: weakref.WeakSet[Any] = weakref.WeakSet()


def asked(download: Download) -> bool:
    """``expect_download``'s predicate: the download is the command's, to watch and keep.

    It runs as the page announces the download, before ``refuse_unasked``'s handler looks.
    """
    _ASKED.add(getattr(download, "_impl_obj", download))
    return True


def was_asked(download: Download) -> bool:
    """Whether a command asked for ``download`` (and so it is kept)."""
    return getattr(download, "_impl_obj", download) in _ASKED


def refuse_unasked(context: BrowserContext) -> None:
    """Cancel, and delete, every download of ``context``'s pages that no command asked for.

    Installed before the context has a page, so its handler is the first on every page.
    """
    context.on("page", _on_page)


def _on_page(page: Page) -> None:
    page.on("download", _unasked)


async def _unasked(download: Download) -> None:
    if was_asked(download):
        return
    with contextlib.suppress(PlaywrightError):
        await download.cancel()  # Chromium deletes the partial file
        await download.delete()  # and this, one that was complete already


def too_large(cap: int) -> BrowserdError:
    """The one refusal for a download over ``[browser] download_cap``."""
    return BrowserdError(
        ErrorCode.TOO_LARGE,
        f"The download is over {cap:,} bytes ([browser] download_cap): stopped and deleted.",
    )


def _partial(download: Download) -> Path | None:
    """Where Chromium writes this download (Playwright's artifact; a private detail, so
    absent when it changes: the size is then checked once the download is complete)."""
    impl = getattr(download, "_impl_obj", download)
    artifact = getattr(impl, "_artifact", None)
    path = getattr(artifact, "_initializer", {}).get("absolutePath")
    return Path(path) if path else None


def _written(path: Path) -> int:
    size = 0
    for candidate in (path, path.with_name(path.name + ".crdownload")):
        with contextlib.suppress(OSError):
            size += candidate.stat().st_size
    return size


async def watch_download(
    download: Download, cap: int, over_cap: BrowserdError | None = None
) -> str | None:
    """Wait for ``download`` to finish; its failure, if any.  Cancelled past ``cap``, with
    ``over_cap`` (by default ``too_large``), and nothing of it kept."""
    partial = _partial(download)
    finished = asyncio.ensure_future(download.failure())
    try:
        while not finished.done():
            if partial is not None and _written(partial) > cap:
                await download.cancel()  # Chromium deletes the partial file
                raise over_cap or too_large(cap)
            await asyncio.wait({finished}, timeout=WATCH_INTERVAL)
        failure = finished.result()
    finally:
        finished.cancel()
    if failure is None and partial is not None and _written(partial) > cap:
        with contextlib.suppress(PlaywrightError):
            await download.delete()
        raise over_cap or too_large(cap)
    return failure


async def stream_to_file(
    url: str,
    headers: dict[str, str],
    proxy: str | None,
    cap: int,
    open_file: Callable[[dict[str, str]], Path],
    deadline: float,
    over_cap: BrowserdError | None = None,
) -> tuple[int, str | None, dict[str, str]]:
    """GET ``url``; returns ``(status, location, headers)``.

    A 2xx body is written through ``open_file(headers)`` (it returns a path opened for us);
    past ``cap`` bytes, or ``deadline`` (``loop.time()``: ``TimeoutError``, even while a
    byte-a-second server keeps the connection busy), the file is deleted and the fetch
    stopped, with ``over_cap`` (by default ``too_large``).  Nothing of a failed write is left.
    ``http_client.Unreachable`` when it fails on the way.
    """
    over_cap = over_cap or too_large(cap)
    async with opened("GET", url, deadline=deadline, headers=headers, proxy=proxy) as response:
        head = dict(response.headers)
        if not 200 <= response.status_code < 300:
            return response.status_code, response.headers.get("Location"), head
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > cap:
            raise over_cap
        path = open_file(head)
        written = 0
        with whole_or_gone(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                async for chunk in response.aiter_bytes():
                    written += len(chunk)
                    if written > cap:
                        raise over_cap
                    out.write(chunk)
                    out.flush()  # on the disk as it comes: what the quota sees is what is there
        return response.status_code, None, head
