"""sd_notify over a real datagram socket, as systemd would receive it."""

import os
import socket

from nostr_browserd.daemon.notify import notify, watchdog_interval


def test_notify_sends_a_datagram(tmp_path):
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        assert notify("READY=1", {"NOTIFY_SOCKET": path})
        assert server.recv(100) == b"READY=1"


def test_abstract_socket():
    name = f"nostr-browserd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        assert notify("WATCHDOG=1", {"NOTIFY_SOCKET": "@" + name})
        assert server.recv(100) == b"WATCHDOG=1"


def test_outside_systemd_nothing_happens(tmp_path):
    assert not notify("READY=1", {})
    assert not notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "absent")})


def test_watchdog_interval_is_half_and_only_for_us():
    assert watchdog_interval({"WATCHDOG_USEC": "60000000"}) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"}) is None
    assert watchdog_interval({}) is None
