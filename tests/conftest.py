"""Fixtures live in tests/fixtures/, one module per kind of real part (relay, browser, site).

After the whole run, every log, state file, reply and captured output of the suite is scanned
for every secret the suite used (tests/fixtures/leaks.py); a hit fails the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.fixtures.leaks import LEAKS, Hit, log_everything_to, watch_generated_keys

watch_generated_keys()

from tests.fixtures.browser import *  # noqa: E402, F403
from tests.fixtures.browser_servers import *  # noqa: E402, F403
from tests.fixtures.cluster import *  # noqa: E402, F403
from tests.fixtures.postgres import *  # noqa: E402, F403
from tests.fixtures.relays import *  # noqa: E402, F403
from tests.fixtures.required import node  # noqa: E402, F401
from tests.fixtures.site import *  # noqa: E402, F403
from tests.fixtures.tls import *  # noqa: E402, F403

# The real parts a test needs, read from the fixtures it uses, so that `-m "not chromium"` or
# `-m postgres` selects by them.
REAL_PARTS = {
    "chromium": {
        "browser_pool",
        "session",
        "dispatcher",
        "call",
        "message",
        "browser_servers",
        "devtools",
        "start_daemon",
        "cluster",
    },
    "relay": {
        "nostr_relay_url",
        "local_relay_factory",
        "permissive_relay",
        "start_daemon",
        "cluster",
    },
    "postgres": {"postgres_dsn", "cluster"},
    "node": {"node"},
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in REAL_PARTS.items():
            if used & fixtures:
                item.add_marker(marker)


_captured: list[tuple[str, str]] = []
_report: list[tuple[Path, list[Hit], float]] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Log everything, and give every state directory left to its default a place in the
    run's own temporary tree (scanned after it), never the machine's ~/.local/state."""
    basetemp = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    log_everything_to(basetemp / "nostr_browserd.log")
    os.environ["XDG_STATE_HOME"] = str(basetemp / "xdg-state")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep what every test printed and logged (passing tests' output is scanned too)."""
    for name, content in report.sections:
        _captured.append((f"{report.nodeid}: {name}", content))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Scan after the whole run; a hit makes the run fail (exit code 1)."""
    basetemp = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    started = time.perf_counter()
    hits = LEAKS.scan([basetemp], _captured)
    if hits:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _report.append((basetemp, hits, time.perf_counter() - started))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for basetemp, hits, seconds in _report:
        if hits:
            terminalreporter.write_sep(
                "=", "secrets scan: a secret the suite used came out", red=True
            )
            for hit in hits:
                near = f": …{hit.around}…" if hit.around else ""
                terminalreporter.write_line(f"{hit.what} in {hit.where}{near}", red=True)
            terminalreporter.write_line(f"secrets scan: {len(hits)} hit(s)", red=True)
        else:
            terminalreporter.write_line(
                f"secrets scan ({LEAKS.scanned['files']} files under {basetemp}, "
                f"{LEAKS.scanned['outputs']} outputs, {seconds:.1f} s): "
                f"none of {LEAKS.counts()} found"
            )
