"""The approvals waiting on this worker: their codes, the approver's decision, the guesses.

- A gated command waits under a fresh code (six characters without 0/O, 1/I), recorded in
  the store for as long as it waits: every worker reads the approver's ``approve <code>``,
  and the worker named there takes it.  What the approver reads is ``consent``'s.
- Only the held command's approver decides.  Anything else is a guess: it decides nothing,
  and the guesser's approver (a controller trying to approve its own command) is told, at
  the 1st, 10th, 100th… try.
- ``deny``, the timeout, a failed delivery or a shutdown answer the command ``DENIED``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import npub_encode
from .config import ControllerConfig
from .consent import approval_messages
from .store import Store, quietly

log = logging.getLogger(__name__)

APPROVAL = re.compile(r"^\s*(approve|deny)\s+([A-Za-z0-9]{4,12})\s*$", re.I)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
# The prompt's delivery may take this long before the approver's time starts: a killed
# worker's approval is forgotten by the others only after both.
APPROVAL_DELIVERY = 60.0

Tell = Callable[[str, str], Awaitable[bool]]
"""Send a DM to a key, in the scheme it last wrote in; whether it went out."""
Waiting = Callable[[float], Awaitable[None]]


def approval_code(content: str) -> str | None:
    """The code of an ``approve``/``deny`` message, or None for anything else."""
    match = APPROVAL.match(content)
    return match[2].upper() if match else None


@dataclass
class Approval:
    """A gated command waiting for its approver."""

    code: str
    approver: str
    decided: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Approvals:
    """This worker's waiting approvals, and what it has heard of guesses."""

    def __init__(self, store: Store, tell: Tell, worker_name: str = "") -> None:
        """``worker_name``: whose approvals these are in the store (``[state] worker``)."""
        self.store, self._tell, self.worker_name = store, tell, worker_name
        self._waiting: dict[str, Approval] = {}
        self._guesses: dict[str, int] = {}  # approve/deny codes sent by a non-approver

    def holds(self, code: str) -> bool:
        """Whether a command of this worker waits for an approval with ``code``."""
        return code in self._waiting

    def waiting(self) -> bool:
        """Whether a command of this worker waits for an approval (its code may come in any
        approver's message, whoever holds that approver's lease)."""
        return bool(self._waiting)

    async def ask(
        self,
        controller: ControllerConfig,
        approver: str,
        tool: str,
        who: str,
        what: str,
        waiting: Waiting | None = None,
    ) -> None:
        """Ask ``approver`` by DM whether ``who`` may run ``what`` (a ``tool``), and wait.

        Returns on ``approve``; raises ``DENIED`` on deny, the timeout or a failed delivery,
        and ``UNAVAILABLE`` when the store cannot record the code.  ``waiting(seconds)``
        hears once the approver has been asked (the requester's notice).
        """
        code = await self._fresh_code(controller, approver, tool)
        approval = self._waiting[code] = Approval(code, approver)
        timeout = controller.approval_timeout
        try:
            for message in approval_messages(who, what, code, timeout):
                if not await self._tell(approver, message):
                    raise BrowserdError(
                        ErrorCode.DENIED,
                        "The approval request could not be delivered to the approver.",
                    )
            if waiting is not None:
                await waiting(timeout)
            async with asyncio.timeout(timeout):
                approved = await approval.decided
        except TimeoutError:
            raise BrowserdError(
                ErrorCode.DENIED, f"The approver did not answer within {timeout:g} s."
            ) from None
        finally:
            self._waiting.pop(code, None)
            await quietly(self.store.drop_approval(code))
        if not approved:
            raise BrowserdError(ErrorCode.DENIED, "The approver denied this command.")

    async def _fresh_code(self, controller: ControllerConfig, approver: str, tool: str) -> str:
        """A code no approval waits under, on any worker, recorded as this one's."""
        for _ in range(8):  # 32^6 codes: a taken one comes up about once in a billion
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(6))
            if code not in self._waiting and await self.store.hold_approval(
                code,
                worker=self.worker_name,
                controller=controller.pubkey,
                approver=approver,
                tool=tool,
                expires_in=controller.approval_timeout + APPROVAL_DELIVERY,
            ):
                return code
        raise BrowserdError(ErrorCode.UNAVAILABLE, "No free approval code; send this again.")

    async def decide(
        self, sender: str, approve: bool, code: str, guesser: ControllerConfig | None
    ) -> str:
        """``sender``'s ``approve``/``deny``; the answer to send back.  ``guesser``: the
        sender's own entry when it is a controller (whose approver hears of its guesses)."""
        approval = self._waiting.get(code)
        if approval is None or approval.approver != sender or approval.decided.done():
            answer = f"No command is waiting for your decision on code {code}."
            if guesser is not None:
                await self._tell_of_guess(guesser)
        else:
            approval.decided.set_result(approve)
            answer = f"{'Approved' if approve else 'Denied'}: {code}."
        log.info("approval %s from %s: %s", code, sender[:12], answer)
        return answer

    async def _tell_of_guess(self, guesser: ControllerConfig) -> None:
        if guesser.approver is None:
            return
        sender = guesser.pubkey
        count = self._guesses[sender] = self._guesses.get(sender, 0) + 1
        if str(count).strip("0") != "1":  # 1, 10, 100…: the approver is told, not flooded
            return
        who = guesser.name or npub_encode(sender)[:20] + "…"
        notice = (
            f"{who} sent an approve/deny code {count} time(s) so far; only you decide its"
            " commands, and nothing was approved by it. If you did not expect this, remove the"
            " key from the allow-list."
        )
        with contextlib.suppress(Exception):
            await self._tell(guesser.approver, notice)

    def deny_all(self) -> None:
        """Every waiting command is denied (the daemon is stopping)."""
        for approval in list(self._waiting.values()):
            if not approval.decided.done():
                approval.decided.set_result(False)
