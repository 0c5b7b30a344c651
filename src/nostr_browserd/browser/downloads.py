"""Downloads held to a size cap while they happen, not after: the disk never takes a 1 GB file
to find out it was too big.

A download the browser makes (a click) is watched as Chromium writes its ``.crdownload`` and
cancelled (the partial file deleted) once it passes the cap; the check runs every
``WATCH_INTERVAL``, so the file can pass the cap by what arrives in one interval.  A download
by address is streamed here, chunk by chunk, into an owner-only file that is deleted the moment
it passes the cap or its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from playwright.async_api import Download
from playwright.async_api import Error as PlaywrightError

from ..errors import BrowserdError, ErrorCode
from ..http_client import opened

WATCH_INTERVAL = 0.02


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


async def watch_download(download: Download, cap: int) -> str | None:
    """Wait for ``download`` to finish; its failure, if any.  Cancelled past ``cap``."""
    partial = _partial(download)
    finished = asyncio.ensure_future(download.failure())
    try:
        while not finished.done():
            if partial is not None and _written(partial) > cap:
                await download.cancel()  # Chromium deletes the partial file
                raise too_large(cap)
            await asyncio.wait({finished}, timeout=WATCH_INTERVAL)
        failure = finished.result()
    finally:
        finished.cancel()
    if failure is None and partial is not None and _written(partial) > cap:
        with contextlib.suppress(PlaywrightError):
            await download.delete()
        raise too_large(cap)
    return failure


async def stream_to_file(
    url: str,
    headers: dict[str, str],
    proxy: str | None,
    cap: int,
    open_file: Callable[[dict[str, str]], Path],
    deadline: float,
) -> tuple[int, str | None, dict[str, str]]:
    """GET ``url``; returns ``(status, location, headers)``.

    A 2xx body is written through ``open_file(headers)`` (it returns a path opened for us);
    past ``cap`` bytes, or ``deadline`` (``loop.time()``: ``TimeoutError``, even while a
    byte-a-second server keeps the connection busy), the file is deleted and the fetch
    stopped.  ``http_client.Unreachable`` when it fails on the way.
    """
    async with opened("GET", url, deadline=deadline, headers=headers, proxy=proxy) as response:
        head = dict(response.headers)
        if not 200 <= response.status_code < 300:
            return response.status_code, response.headers.get("Location"), head
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > cap:
            raise too_large(cap)
        path = open_file(head)
        written = 0
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                async for chunk in response.aiter_bytes():
                    written += len(chunk)
                    if written > cap:
                        raise too_large(cap)
                    out.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return response.status_code, None, head
