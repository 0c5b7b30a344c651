"""Log in with an n_signer in another qube, over Qubes qrexec.

We run ``qrexec-client-vm <device> <service>`` once per session and speak the line
framing of :mod:`.nsigner_wire` over its stdin/stdout.  qrexec's exit statuses carry
meaning (126: the dom0 policy refused the call; 125: qrexec itself failed), so a dead
channel becomes an error that says what to fix.  Every signed event is verified.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
from typing import Any

from ..errors import BrowserdError, ErrorCode
from . import nsigner_wire as wire
from .remote import RemoteSigner

__all__ = ["DEFAULT_BINARY", "DEFAULT_SERVICE", "NsignerSigner"]

DEFAULT_BINARY = "qrexec-client-vm"
DEFAULT_SERVICE = "qubes.NsignerRpc"

# qrexec's own limits: a target qube (or @keyword) and a service name (+argument).
_TARGET = re.compile(r"@?[A-Za-z0-9_.$-]{1,31}(:[A-Za-z0-9_.$-]{1,31})?")
_SERVICE = re.compile(r"[A-Za-z0-9_.$+-]{1,63}")
_EXIT_WAIT = 5.0


class NsignerSigner(RemoteSigner):
    """A :class:`~nostr_browserd.nostr.signer.Signer` whose key is in an n_signer slot."""

    def __init__(
        self,
        device: str,
        service: str = DEFAULT_SERVICE,
        index: int = 0,
        *,
        binary: str = DEFAULT_BINARY,
        timeout: float = 30.0,
    ) -> None:
        if not isinstance(device, str) or not _TARGET.fullmatch(device):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "device must be a qube name (up to 31 of A-Z a-z 0-9 - _ . $) or @keyword",
            )
        if not isinstance(service, str) or not _SERVICE.fullmatch(service):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "service must be a qrexec service name (up to 63 of A-Z a-z 0-9 - _ . $ +)",
            )
        if not isinstance(index, int) or index < 0:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "index must be an integer >= 0")
        self.device, self.service, self.index = device, service, index
        self._who = f"n_signer {device}/{service} slot {index}"
        self._binary = binary
        self._timeout = timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=5)
        self._stderr_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._counter = 0

    def __repr__(self) -> str:
        return (
            f"NsignerSigner(device={self.device!r}, service={self.service!r}, index={self.index})"
        )

    # -- the channel ---------------------------------------------------------------

    async def _start(self) -> asyncio.subprocess.Process:
        if self._proc is not None and self._proc.returncode is None:
            return self._proc
        self._stderr.clear()
        try:
            proc = await asyncio.create_subprocess_exec(
                self._binary,
                self.device,
                self.service,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=wire.MAX_LINE,
            )
        except OSError as exc:
            raise BrowserdError(
                ErrorCode.SIGNER_ERROR,
                f"cannot run {self._binary!r} ({exc.strerror}): is this a Qubes qube with "
                "qubes-core-agent installed? The binary is configurable.",
            ) from None
        self._proc = proc
        self._stderr_task = asyncio.create_task(self._drain_stderr(proc))
        return proc

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self._stderr.append(line[:200])

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, _EXIT_WAIT)
            self._stderr_task = None

    async def _closed_error(self, proc: asyncio.subprocess.Process) -> BrowserdError:
        """The error for a channel that ended: qrexec's exit status says why."""
        try:
            code = await asyncio.wait_for(proc.wait(), _EXIT_WAIT)
        except TimeoutError:
            code = None
        await self._stop()
        said = f" (it said: {self._stderr[-1]})" if self._stderr else ""
        if code == 126:
            return BrowserdError(
                ErrorCode.REFUSED,
                f"the qrexec policy refused the call to {self.service} on {self.device}{said}. "
                f"Allow it in dom0, e.g. '{self.service} * <this qube> {self.device} ask' "
                "in /etc/qubes/policy.d/",
            )
        if code == 125:
            return BrowserdError(
                ErrorCode.SIGNER_ERROR,
                f"qrexec could not reach {self.service} on {self.device}{said}: is the qube "
                "running and the service installed there?",
            )
        return BrowserdError(
            ErrorCode.SIGNER_ERROR,
            f"the {self._who} channel closed (exit status {code}){said}",
        )

    async def _call(self, method: str, *params: str) -> str:
        async with self._lock:
            proc = await self._start()
            assert proc.stdin is not None and proc.stdout is not None
            self._counter += 1
            req_id = str(self._counter)
            try:
                proc.stdin.write(wire.encode_request(req_id, method, params, self.index))
                await proc.stdin.drain()
                line = await asyncio.wait_for(proc.stdout.readline(), self._timeout)
            except (BrokenPipeError, ConnectionResetError):
                line = b""
            except TimeoutError:
                await self._stop()
                raise BrowserdError(
                    ErrorCode.TIMEOUT,
                    f"the {self._who} did not answer {method} within {self._timeout:g} s "
                    "(is a confirmation waiting on the signer?)",
                ) from None
            except ValueError:  # line longer than the stream limit
                await self._stop()
                raise BrowserdError(
                    ErrorCode.SIGNER_ERROR, f"the {self._who} sent an over-long line"
                ) from None
            if not line:
                raise await self._closed_error(proc)
            try:
                reply = wire.decode_reply(line)
                if reply.id != req_id:
                    raise wire.WireError("the signer answered another request id")
            except wire.WireError as exc:
                await self._stop()  # the stream is out of step: start afresh next time
                raise BrowserdError(ErrorCode.SIGNER_ERROR, f"{self._who}: {exc}") from None
        if reply.error is not None:
            raise BrowserdError(
                ErrorCode.SIGNER_ERROR, f"the {self._who} refused {method}: {reply.error[:200]}"
            )
        assert reply.result is not None
        return reply.result

    def describe(self) -> dict[str, Any]:
        """Status details: where the key lives."""
        return {
            "transport": "qrexec",
            "device": self.device,
            "service": self.service,
            "index": self.index,
        }

    async def aclose(self) -> None:
        """End the qrexec session."""
        async with self._lock:
            await self._stop()
