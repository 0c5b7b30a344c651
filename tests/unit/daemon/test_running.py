"""Running: what a request past its deadline is told, as far as it had got."""

import pytest

from nostr_browserd.commands.protocol import Progress
from nostr_browserd.daemon.running import overdue
from nostr_browserd.errors import ErrorCode


@pytest.mark.parametrize(
    ("progress", "says", "never"),
    [
        (Progress(), "was not run", "stopped"),
        (Progress(started=True), "was stopped", "done"),
        (Progress(started=True, done=True), "was done", "stopped"),
    ],
)
def test_a_late_reply_says_what_happened(progress, says, never):
    error = overdue("click", 3, progress)
    assert error.code is ErrorCode.TIMEOUT and "within 3 s" in error.message
    assert says in error.message and never not in error.message
