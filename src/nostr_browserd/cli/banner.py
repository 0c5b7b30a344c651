"""What ``nostr-browserd run`` prints once the daemon is ready: who it is, where, and how
to talk to it."""

from __future__ import annotations

from typing import Any

from ..daemon.config import Config
from ..nostr.nip19 import npub_encode


def banner(daemon: Any) -> str:
    """What a person needs after ``run``: who the daemon is, where, and how to talk to it."""
    config: Config = daemon.config
    npub = daemon.npub or "none: waiting for login on the local channel (token required)"
    relays = daemon.relays
    relay_args = " ".join(f"--relay {url}" for url in relays[:1])
    lines = [
        "nostr-browserd is running.",
        f"  identity:    {npub} ({config.identity.method})",
        f"  relays:      {', '.join(relays) or 'none'}"
        + ("  (embedded, loopback only)" if daemon.embedded else ""),
        f"  state:       {daemon.state_dir}",
    ]
    if daemon.local is not None:
        port = daemon.local.port
        lines.append(
            f"  local:       ws://127.0.0.1:{port}/agent   status: http://127.0.0.1:{port}/"
        )
        lines.append(f"  local token: {daemon.local_token_path} (Authorization: Bearer …)")
    lines.append(f"  direct msgs: {daemon.dm_state()}")
    allowed = config.allowed()
    if allowed:
        lines.append("  controllers: " + ", ".join(npub_encode(pk) for pk in allowed))
    else:
        lines += [
            "  controllers: none yet, so no command will run.",
            "",
            "To allow a controller, give the daemon its public key, e.g. a new one:",
            "  nostr-browserd keygen controller.nsec        # prints the controller's npub",
            "  NOSTR_BROWSERD_NOSTR_CONTROLLERS=npub1… nostr-browserd run",
            '(or controllers = ["npub1…"] under [nostr] in the config file, then SIGHUP).',
        ]
    if daemon.npub is None:
        lines += [
            "",
            "Log it in on the local channel (with the token in the state directory), e.g.:",
            '  {"tool": "login", "params": {"method": "local", "nsec_file": "/path/key.nsec"}}',
        ]
        return "\n".join(lines)
    lines += [
        "",
        "Send it a command (NIP-17; add --nip04 for legacy DMs, --json for JSON):",
        f"  nostr-browserd send --to {npub} --key controller.nsec {relay_args} open example.com",
        "  … get title | snapshot -i | click @e2 | screenshot   (send 'help' for every tool)",
    ]
    return "\n".join(lines)
