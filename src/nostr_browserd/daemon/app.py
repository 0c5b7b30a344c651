"""The daemon: login, relays, inbox, dispatcher, outbox, browser and local channel, joined.

Start order: state store → identity → (embedded relay) → browser → worker row and heartbeat
→ relay pool → inbox subscription → announcements (kind 10050, 10002, 0) → local channel →
``READY=1``.  Stop order is the reverse, after a drain: the worker takes nothing new, the
dispatcher finishes the running and queued commands and sends their replies, and the worker
saves its controllers' sessions and releases their leases.  A read-only identity starts
everything except the inbox: it serves the local channel and status, and says plainly that it
cannot read or answer direct messages.
With no identity (``[identity] method = "none"``, or logged out) only the local channel
runs, every tool but the login tools answers ``NOT_LOGGED_IN``, and the daemon waits for
``login`` there.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..agent.keys import KeyStore
from ..browser.pool import BrowserPool
from ..catalog import REGISTRY
from ..dm.link import NostrLink
from ..dm.messages import Scheme
from ..dm.push import EventForwarder
from ..errors import BrowserdError
from ..login.manager import IdentityManager
from ..login.params import LocalLogin, LoginMethod
from ..login.readonly import READ_ONLY_MESSAGE
from ..nostr.nip19 import npub_encode
from ..nostr.signer import Signer
from ..supervise import stopped_readers
from ..tools.stream import live_state
from ..vault.keeper import Vault
from .ask import AskRunner, check_ask_config
from .config import Config, ConfigError, IdentityConfig, load_config, make_browser_dirs
from .dispatch import Dispatcher
from .embedded_relay import EmbeddedRelay
from .key_tools import KEY_TOOLS, run_key_tool
from .keyfile import DEFAULT_IDENTITY_FILE, ensure_key
from .local_ws import OWNER, LocalServer, load_token
from .notify import notify, watchdog, watchdog_interval
from .store import Store, open_store
from .store.state_files import shelve
from .workers import Worker

log = logging.getLogger(__name__)


WAITING_FOR_LOGIN = "waiting for login on the local channel"


def login_params(identity: IdentityConfig, state_dir: Path) -> LoginMethod | None:
    """The ``login`` params for the configured identity; None for ``method = "none"``.

    A local identity with no key configured (file, environment variable or systemd
    credential) uses a key generated once into the state directory.
    """
    default = state_dir / DEFAULT_IDENTITY_FILE
    login = identity.login(default)
    if isinstance(login, LocalLogin) and login.nsec_file == default and ensure_key(default):
        log.warning("generated a new identity in %s (mode 0600)", default)
    return login


class Daemon:
    """One running nostr-browserd."""

    def __init__(self, config: Config, config_path: Path | None = None) -> None:
        self.config, self.config_path = config, config_path
        self.state_dir = config.state.dir
        self.started_at = time.time()
        self.identity = IdentityManager(nsigner_binary=config.identity.nsigner.binary)
        self.store: Store | None = None
        self.embedded: EmbeddedRelay | None = None
        self.relays: list[str] = list(config.nostr.relays)
        self.browser = BrowserPool(config.browser)
        self.link: NostrLink | None = None
        self.dispatcher: Dispatcher | None = None
        self.worker: Worker | None = None
        self.local: LocalServer | None = None
        self.local_token_path: Path | None = None
        self.forwarder = EventForwarder(self._send_events)
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._rewiring: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Bring everything up; raises with a clear message when something cannot start."""
        check_ask_config(self.config, REGISTRY)
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        make_browser_dirs(self.config.browser)
        self.store = await open_store(self.config.state)
        await shelve(self.browser, self.store)
        self.browser.vault = Vault(self.store, self.signer)
        configured = login_params(self.config.identity, self.state_dir)
        if configured is not None:
            await self.identity.login(configured)
        if self.config.nostr.uses_embedded_relay:
            self.embedded = EmbeddedRelay(self.config.nostr.embedded_relay_port)
            self.relays.insert(0, await self.embedded.start())
        await self.browser.start()
        self.browser.on_event(self._browser_event)
        self.dispatcher = Dispatcher(
            registry=REGISTRY,
            browser=self.browser,
            store=self.store,
            reply=self._reply,
            send=self._send,
            controllers=self.config.allowed(),
            command_timeout=self.config.browser.command_timeout,
            queue_size=self.config.browser.queue_size,
            local_tools=self._local_tool,
            logged_in=lambda: self.identity.logged_in,
        )
        self.dispatcher.asker = AskRunner(
            self.dispatcher,
            self.store,
            self.config.ask,
            self.key_store,
            REGISTRY,
            self.config.browser.result_cap,
        )
        state = self.config.state
        self.worker = Worker(
            self.store, state.worker, state.lease, dispatcher=self.dispatcher, browser=self.browser
        )
        self.dispatcher.worker, self.dispatcher.worker_name = self.worker, state.worker
        self.browser.initial_state = self.worker.initial_state
        await self.worker.start()
        await self._connect_nostr()
        if self.link is not None and self.link.listening:  # what a killed daemon left unanswered
            self._tasks.append(asyncio.create_task(self.dispatcher.answer_unanswered()))
        self.identity.add_listener(self._identity_changed)
        if self.config.local.enabled:
            local = self.config.local
            self.local_token_path = local.token_path(self.state_dir)
            self.local = LocalServer(
                self.dispatcher.handle_local,
                self.status,
                port=local.port,
                token=load_token(self.local_token_path, generate=local.generated),
                frames=self.browser.frames,
                live=self._live,
            )
            await self.local.start()
            self.browser.policy.deny_port(self.local.port)  # no page reaches the status page
        self._tasks.append(asyncio.create_task(self._prune_store()))
        interval = watchdog_interval()
        if interval:
            self._tasks.append(asyncio.create_task(watchdog(interval, stopped_readers)))
        notify("READY=1")
        self._notify_identity()

    async def run(self, on_ready: Callable[[], None] | None = None) -> int:
        """Start, serve until SIGTERM/SIGINT (SIGHUP reloads the allow-list), stop; exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        try:
            await self.start()
            if on_ready is not None:
                on_ready()
            await self._stop.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
            await self.stop()
        return 0

    async def stop(self) -> None:
        """Finish running commands and their replies, then close everything, in reverse."""
        self._stop.set()
        notify("STOPPING=1")
        if self.worker is not None:
            await self.worker.drain()
        if self.link is not None:
            self.link.stop_listening()
        if self.dispatcher is not None:
            await self.dispatcher.close()
        if self.worker is not None:
            await self.worker.leave()
            self.worker = None
        if self.local is not None:
            await self.local.close()
        await self.forwarder.close()
        if self._rewiring is not None:
            await asyncio.gather(self._rewiring, return_exceptions=True)
        await self._disconnect_nostr()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.browser.close()
        await self.identity.logout()
        if self.embedded is not None:
            self.embedded.stop()
        if self.store is not None:
            await self.store.close()
            self.store = None
        log.info("stopped")

    def reload(self) -> None:
        """SIGHUP: re-read the config file and the environment; apply the new allow-list."""
        try:
            config = load_config(self.config_path)
        except ConfigError as exc:
            log.error("reload failed, keeping the current allow-list: %s", exc)
            return
        self.config.controllers, self.config.nostr.controllers = (
            config.controllers,
            config.nostr.controllers,
        )
        if self.dispatcher is not None:
            self.dispatcher.controllers = config.allowed()
            log.info("reloaded the allow-list: %d controller(s)", len(config.allowed()))
        if self.link is not None:  # follow the new list's DM inbox relays
            self.link.follow_controllers()

    async def _prune_store(self) -> None:
        """Hourly: forget seen and rejected ids older than the retention (far beyond any
        relay's re-delivery), and workers silent as long; keep the rejected ids and the audit
        log within their bounds."""
        assert self.store is not None
        state = self.config.state
        while True:
            try:
                pruned = await self.store.prune(state.seen_retention)
                pruned += await self.store.trim(
                    max_rejected=state.rejected_max_ids,
                    audit_age=state.audit_retention,
                    max_audit=state.audit_max_rows,
                )
                pruned += await self.store.forget_workers(state.seen_retention)
            except BrowserdError as exc:
                log.error("%s", exc.message)
                pruned = 0
            if pruned:
                log.info("pruned %d old rows from the state store", pruned)
            await asyncio.sleep(3600)

    # --- the Nostr side (rebuilt when the identity changes) ----------------------------

    @property
    def npub(self) -> str | None:
        """The daemon's npub, or None when logged out."""
        return self.identity.identity()["npub"] if self.identity.logged_in else None

    async def _connect_nostr(self) -> None:
        if not self.identity.logged_in:
            log.warning(
                "no identity: %s (the local token is required); until then every tool but"
                " the login tools answers NOT_LOGGED_IN and direct messages are off",
                WAITING_FOR_LOGIN,
            )
            return
        if self.identity.readonly:
            log.warning("%s", READ_ONLY_MESSAGE)
        assert self.dispatcher is not None and self.store is not None
        self.link = NostrLink(
            self.identity.signer,
            readonly=self.identity.readonly,
            relays=self.relays,
            config=self.config.nostr,
            store=self.store,
            dispatcher=self.dispatcher,
            controllers=self.config.allowed,
            gate=self.worker,
        )
        await self.link.start()

    async def _disconnect_nostr(self) -> None:
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()

    def _identity_changed(self, status: dict[str, Any]) -> None:
        """After login/switch/logout on the local channel, rebuild the Nostr side.

        Logging out also closes every owner's browser context, as a stop does: nothing
        browsed under one identity stays open for the next.
        """
        if self._stop.is_set():
            return

        async def rewire() -> None:
            await self._disconnect_nostr()
            if not self.identity.logged_in:
                await self.browser.release_all()
            await self._connect_nostr()
            self._notify_identity()

        self._rewiring = asyncio.create_task(rewire())

    def _notify_identity(self) -> None:
        """Tell systemd who we serve as now (``systemctl status`` shows it)."""
        notify(f"STATUS=serving as {self.npub}" if self.npub else f"STATUS={WAITING_FOR_LOGIN}")

    # --- callbacks for the dispatcher --------------------------------------------------

    async def _reply(self, incoming: Any, text: str, request_id: Any) -> bool:
        return self.link is not None and await self.link.reply(incoming, text, request_id)

    async def _send(self, recipient: str, text: str, scheme: Scheme) -> bool:
        return self.link is not None and await self.link.send(recipient, text, scheme)

    def _browser_event(self, event: dict[str, Any]) -> None:
        """Push the local session's events to local clients; forward watched ones by DM."""
        if self.local is not None and event["owner"] in (OWNER, "shared"):
            self.local.broadcast({"event": event["event"], "data": event["data"]})
        self.forwarder.push(event)

    async def _send_events(self, owner: str, text: str) -> None:
        if self.dispatcher is not None:
            await self._send(owner, text, self.dispatcher.scheme_of(owner))

    def signer(self) -> Signer | None:
        """The identity logged in now, which seals the API keys and the vault."""
        return self.identity.signer if self.identity.logged_in else None

    def key_store(self) -> KeyStore:
        """The API keys of ``ask``, encrypted through the identity logged in now."""
        return KeyStore(self.state_dir, self.signer())

    async def _local_tool(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """Login and API-key tools: on the local channel only."""
        if tool in KEY_TOOLS:
            return await run_key_tool(self.key_store(), tool, params)
        if tool == "login_status":
            return self.identity.status()
        before = self._rewiring
        if tool == "login":
            result = await self.identity.login(params)
        elif tool == "switch_identity":
            result = await self.identity.switch_identity(params)
        else:
            result = await self.identity.logout()
        if self._rewiring not in (None, before):  # answer once the Nostr side and browser follow
            await self._rewiring
        return result

    # --- status ------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """Identity, relays and their state, controllers, queues, recent commands, and the
        workers sharing the state store with their load and leases."""
        login = self.identity.status()
        relays = {}
        if self.link is not None:
            for url, st in self.link.relay_status().items():
                relays[url] = {
                    "state": st.state,
                    "publish_state": st.publish_state,
                    "authenticated": st.authenticated,
                    "last_error": st.last_error,
                }
        controllers = [
            {
                "npub": npub_encode(pk),
                "name": c.name,
                "role": c.role,
                "approver": npub_encode(c.approver) if c.approver else None,
            }
            for pk, c in (self.dispatcher.controllers if self.dispatcher else {}).items()
        ]
        status: dict[str, Any] = {
            "version": __version__,
            "uptime": round(time.time() - self.started_at, 1),
            "identity": login,
            "direct_messages": self.dm_state(),
            "relays": relays,
            "embedded_relay": self.embedded.url if self.embedded else None,
            "controllers": controllers,
            "browser": {"alive": self.browser.alive, "sessions": len(self.browser.sessions())},
            "endpoints": self.browser.status(),
            "tabs": self._tabs(),
        }
        if self.dispatcher is not None:
            status.update(self.dispatcher.status())
        if self.link is not None and self.link.inbox is not None:
            status["inbox"] = self.link.inbox.status()
        if self.store is not None:
            status["store"] = {"database": self.store.where, **(await self.store.counts())}
            status["approvals"] = [
                {
                    **a,
                    "controller": npub_encode(a["controller"]),
                    "approver": npub_encode(a["approver"]),
                }
                for a in await self.store.approvals()
            ]
            status["recent"] = [e.to_dict() for e in await self.store.recent(10)]
        if self.worker is not None:
            status.update(await self.worker.status())
        return status

    async def _live(self) -> dict[str, Any]:
        """What the /live page shows beside the picture: the local tab, the last commands."""
        return await live_state(
            self.browser.existing(OWNER),
            self.browser.frames,
            [e.to_dict() for e in await self.store.recent(10)] if self.store is not None else [],
        )

    def _tabs(self) -> list[dict[str, Any]]:
        """Every session's tabs: whose (an npub, or "local"), the id, the address."""
        tabs = []
        for session in self.browser.sessions():
            owner = session.owner
            if len(owner) == 64 and all(c in "0123456789abcdef" for c in owner):
                owner = npub_encode(owner)
            for tab in session.tabs.values():
                active = tab is session.tab
                tabs.append({"owner": owner, "tab": tab.id, "url": tab.page.url, "active": active})
        return tabs

    def dm_state(self) -> str:
        """Whether direct messages are served, and why not."""
        if not self.identity.logged_in:
            return "off: " + WAITING_FOR_LOGIN
        if self.identity.readonly:
            return "off: " + READ_ONLY_MESSAGE
        return "on: " + ", ".join(self.config.nostr.dm)
