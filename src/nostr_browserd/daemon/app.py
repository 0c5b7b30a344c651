"""The daemon: login, relays, inbox, dispatcher, outbox, browser and local channel, joined.

Start order: state store → the browser's launch, and beside it identity → worker row and
heartbeat → local channel → (embedded relay) → relay pool → inbox subscription →
announcements (kind 10050, 10002, 0); ``READY=1`` once both are done, with the start's
timeline logged (a command that comes before the browser is up waits for it; the local
channel answers while the relays start).  Stop order is the reverse, after
a drain: the worker takes nothing new, the dispatcher finishes the running and queued
commands and sends their replies, and the worker saves its controllers' sessions and
releases their leases.  A read-only identity starts everything except the inbox: it serves
the local channel and status, and says plainly that it cannot read or answer direct messages.
With no identity (``[identity] method = "none"``, or logged out) only the local channel
runs, every tool but the login tools answers ``NOT_LOGGED_IN``, and the daemon waits for
``login`` there.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..agent.keys import KeyStore
from ..browser.endpoints import Launched
from ..browser.pool import BrowserPool
from ..catalog import REGISTRY
from ..dm.link import CarrierServer, IdentityLink, NostrLink, Receiver
from ..dm.push import EventForwarder
from ..errors import BrowserdError
from ..files.chat import ChatFiles
from ..login.manager import IdentityManager
from ..login.params import LocalLogin, LoginMethod
from ..nostr.signer import Signer
from ..supervise import stopped_readers
from ..tools.stream import live_state
from ..vault.keeper import Vault
from .allow_list import AllowList
from .ask import AskRunner, check_ask_config
from .compose import Core, open_core
from .config import Config, ConfigError, ControllerConfig, IdentityConfig, load_config
from .dispatch import Dispatcher
from .embedded_relay import EmbeddedRelay
from .key_tools import KEY_TOOLS, run_key_tool
from .keyfile import DEFAULT_IDENTITY_FILE, ensure_key
from .local_ws import OWNER, LocalServer, load_token
from .notify import notify, watchdog, watchdog_interval
from .schedule.service import Scheduler
from .status import WAITING_FOR_LOGIN, Running, daemon_status, direct_messages
from .store import Store
from .store.state_files import seal_older_releases
from .timeline import Timeline
from .workers import Worker

if TYPE_CHECKING:
    from ..contextvm.server import ContextVmServer

log = logging.getLogger(__name__)


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

    def __init__(
        self,
        config: Config,
        config_path: Path | None = None,
        early: Awaitable[Launched] | None = None,
        timeline: Timeline | None = None,
    ) -> None:
        """``early``: the local browser's launch, begun before this module was imported;
        ``timeline``: the start's, begun with it (by default: now)."""
        self.config, self.config_path = config, config_path
        self._early = early
        self.state_dir = config.state.dir
        self.started_at = time.time()
        self.timeline = timeline or Timeline()
        self.identity = IdentityManager(nsigner_binary=config.identity.nsigner.binary)
        self.allowed = AllowList.of(config)  # shared: the inbox, link, dispatcher, worker
        self.embedded: EmbeddedRelay | None = None
        self.relays: list[str] = list(config.nostr.relays)
        self.core: Core | None = None
        # The Nostr side of whoever is logged in now (dm/link.py), rebuilt on each change.
        self.nostr = IdentityLink(
            self.identity, self._make_link, self._make_carrier, self._carrier_started
        )
        self.worker: Worker | None = None
        self.watches: Scheduler | None = None
        self.local: LocalServer | None = None
        self.local_token_path: Path | None = None
        self.forwarder = EventForwarder(self._send_events)
        self.files: ChatFiles | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Bring everything up; raises with a clear message when something cannot start.

        The browser launches while the rest starts beside it (``_start_beside``): a command
        that arrives before it is up waits for it.  READY once both are done.
        """
        check_ask_config(self.config, REGISTRY)
        self.core = await open_core(
            self.config,
            self.allowed,
            reply=self.nostr.reply,
            send=self.nostr.send,
            local_tools=self._local_tool,
            logged_in=lambda: self.identity.logged_in,
            signer=self.signer,
            initial_state=self._saved_session,
            vault=lambda store: Vault(store, self.signer),
            worker=self._make_worker,
            asker=self._make_asker,
            beside=self._start_beside,
            timeline=self.timeline,
            early=self._early,
        )
        notify("READY=1")
        self._notify_identity()
        interval = watchdog_interval()
        if interval:
            self._tasks.append(asyncio.create_task(watchdog(interval, stopped_readers)))
        log.info("%s", self.timeline.summary())

    async def _start_beside(self, core: Core) -> None:
        """What does not wait for the browser: login, relays, worker, local channel."""
        self.core = core  # from here on ``stop`` closes it, should the start fail
        with self.timeline.step("login"):
            configured = login_params(self.config.identity, self.state_dir)
            if configured is not None:
                await self.identity.login(configured)
            await self._seal_older()
        dispatcher = core.dispatcher
        core.browser.on_event(self._browser_event)
        assert isinstance(dispatcher.worker, Worker)
        self.worker = dispatcher.worker
        self._files(dispatcher)
        with self.timeline.step("worker"):
            await self.worker.start()
        try:
            await self._serve(dispatcher)
        except BaseException:  # the worker's name is free at once for the next start
            await self.worker.leave()
            self.worker = None
            raise

    async def _serve(self, dispatcher: Dispatcher) -> None:
        """After the worker has its name: the local channel, then the relays (the embedded
        one first, when configured).

        The local channel needs no relay, so it answers while they start and connect.  A
        login there meanwhile rewires the Nostr side after this first connection
        (``_identity_changed``).  The monitors' scheduler is there before the local channel,
        so that its tools answer as they will; it loads what is due once the relays are up.
        """
        self.identity.add_listener(self._identity_changed)
        timeout = self.config.browser.command_timeout
        dispatcher.running.watches = self.watches = Scheduler(
            dispatcher, self.config.monitors, timeout
        )
        if self.config.local.enabled:
            local = self.config.local
            self.local_token_path = local.token_path(self.state_dir)
            self.local = LocalServer(
                dispatcher.handle_local,
                self.status,
                port=local.port,
                token=load_token(self.local_token_path, generate=local.generated),
                frames=dispatcher.browser.frames,
                live=self._live,
            )
            with self.timeline.step("local channel"):
                await self.local.start()
            dispatcher.browser.policy.deny_port(self.local.port)  # no page reaches the status page
        # The first local command needs the browser and its first window, no relay: the
        # relays' start (the embedded relay's library, the connections, the ContextVM side's
        # imports: a fifth of a second of CPU, much of it with the GIL held) took the CPU from
        # them, so it begins once that window is made (at once when none is to be made).
        await dispatcher.browser.spare_made()
        with self.timeline.step("relays"):
            await self.nostr.start(before=self._embedded_relay())
        if self.link is not None and self.link.listening:  # what a killed daemon left unanswered
            self._tasks.append(asyncio.create_task(dispatcher.lanes.answer_unanswered()))
        await self.watches.start()
        self._tasks.append(asyncio.create_task(self._prune_store()))

    async def _embedded_relay(self) -> None:
        """The embedded relay, when configured: the first of the relays."""
        if self.config.nostr.uses_embedded_relay:
            with self.timeline.step("embedded relay"):
                self.embedded = EmbeddedRelay(self.config.nostr.embedded_relay_port)
                self.relays.insert(0, await self.embedded.start())

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
        core = self.core
        if self.worker is not None:
            await self.worker.drain()
        if self.link is not None:
            self.link.stop_listening()
        if core is not None:
            await core.dispatcher.close()
            if core.dispatcher.files_out is not None:
                await core.dispatcher.files_out.close()
        if self.worker is not None:
            await self.worker.leave()
            self.worker = None
        if self.local is not None:
            await self.local.close()
        await self.forwarder.close()
        await self.nostr.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if core is not None:
            await core.browser.close()
        await self.identity.logout()
        if self.embedded is not None:
            self.embedded.stop()
        if core is not None:
            await core.store.close()
            self.core, self.watches = None, None
        log.info("stopped")

    @property
    def dispatcher(self) -> Dispatcher | None:
        """The dispatcher, once started."""
        return None if self.core is None else self.core.dispatcher

    @property
    def browser(self) -> BrowserPool | None:
        """The browser pool, once started."""
        return None if self.core is None else self.core.browser

    @property
    def store(self) -> Store | None:
        """The state store, once started."""
        return None if self.core is None else self.core.store

    def _make_worker(self, dispatcher: Dispatcher) -> Worker:
        """This process's worker among those sharing the store, around ``dispatcher``."""
        state = self.config.state
        return Worker(
            dispatcher.store,
            state.worker,
            state.lease,
            dispatcher=dispatcher,
            browser=dispatcher.browser,
        )

    def _make_asker(self, dispatcher: Dispatcher) -> AskRunner:
        """``ask``'s model loop, its steps run by ``dispatcher``."""
        return AskRunner(
            dispatcher,
            dispatcher.store,
            self.config.ask,
            self.key_store,
            REGISTRY,
            self.config.browser.result_cap,
        )

    async def _saved_session(self, owner: str) -> dict[str, Any] | None:
        """A new context's state: the controller's saved session, which the worker keeps."""
        return None if self.worker is None else await self.worker.initial_state(owner)

    def reload(self) -> None:
        """SIGHUP: re-read the config file and the environment; apply the new allow-list."""
        try:
            config = load_config(self.config_path)
        except ConfigError as exc:
            log.error("reload failed, keeping the current allow-list: %s", exc)
            return
        self.allowed.replace(config.allowed())
        log.info("reloaded the allow-list: %d controller(s)", len(self.allowed))
        if self.link is not None:  # follow the new list's DM inbox relays
            self.link.follow_controllers()

    async def _prune_store(self) -> None:
        """Hourly: forget seen and rejected ids older than the retention (far beyond any
        relay's re-delivery), and workers silent as long; keep the rejected ids and the audit
        log within their bounds; delete the files controllers sent that are due."""
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
            if self.browser is not None and (expired := self.browser.quota.expire()):
                log.info("deleted %d received files past [files] received_keep", len(expired))
            await asyncio.sleep(3600)

    # --- the Nostr side (rebuilt when the identity changes) ----------------------------

    @property
    def npub(self) -> str | None:
        """The daemon's npub, or None when logged out."""
        return self.identity.identity()["npub"] if self.identity.logged_in else None

    @property
    def link(self) -> NostrLink | None:
        """The DM link of the identity logged in now, while there is one."""
        return self.nostr.link

    def _make_link(self, signer: Signer, readonly: bool, carrier: Receiver | None) -> NostrLink:
        """The link for ``signer``: its relays, inbox and outbox, handing on to the
        dispatcher (or, with ContextVM, to its server, which hands DMs on untouched)."""
        assert self.dispatcher is not None and self.store is not None
        return NostrLink(
            signer,
            readonly=readonly,
            relays=self.relays,
            config=self.config.nostr,
            store=self.store,
            dispatcher=carrier or self.dispatcher,
            allowed=self.allowed,
            gate=self.worker,
            mcp=carrier is not None,
            announcements=self._announcements,
        )

    async def _make_carrier(self, signer: Signer) -> ContextVmServer | None:
        """The ContextVM server for ``signer``, or None when it is off."""
        assert self.dispatcher is not None
        # The MCP wire types under the ContextVM server: a tenth of a second of CPU, in a
        # thread (after the local owner's first window, as the relays' whole start: ``_serve``).
        with self.timeline.step("contextvm imports"):
            await asyncio.to_thread(importlib.import_module, f"{__package__}.contextvm_link")
        from .contextvm_link import contextvm_server

        return contextvm_server(self.config, signer, self.dispatcher, REGISTRY, self.nostr.publish)

    async def _carrier_started(self, carrier: CarrierServer, signer: Signer) -> None:
        """Its link listens: the ContextVM server announces itself, when configured to."""
        if not self.config.contextvm.announce:
            return
        from .contextvm_link import tool_names

        server = cast("ContextVmServer", carrier)
        everyone = ControllerConfig(pubkey=await signer.public_key())  # a full role
        self._tasks.append(asyncio.create_task(server.announce(tool_names(REGISTRY, everyone))))

    def _identity_changed(self, status: dict[str, Any]) -> None:
        """After login/switch/logout on the local channel, rebuild the Nostr side.

        Logging out also closes every owner's browser context, as a stop does: nothing
        browsed under one identity stays open for the next.
        """
        if not self._stop.is_set():
            self.nostr.switch(self._logged_out_browsing, self._identity_settled)

    async def _logged_out_browsing(self) -> None:
        """Between two identities: nothing browsed under one stays open when none is in."""
        if not self.identity.logged_in and self.core is not None:
            await self.core.browser.release_all()

    async def _identity_settled(self) -> None:
        """The new identity's link is up: seal what an older release left, tell systemd."""
        await self._seal_older()
        self._notify_identity()

    async def _seal_older(self) -> None:
        """Once an identity is in: seal what an older release saved in plaintext."""
        if self.core is not None and self.identity.logged_in:
            await seal_older_releases(self.config.browser.state_dir, self.core.store)

    def _notify_identity(self) -> None:
        """Tell systemd who we serve as now (``systemctl status`` shows it)."""
        notify(f"STATUS=serving as {self.npub}" if self.npub else f"STATUS={WAITING_FOR_LOGIN}")

    # --- files in private chats -------------------------------------------------------

    def _files(self, dispatcher: Dispatcher) -> None:
        """Files out with text replies and files in for upload (``files.chat``)."""
        assert self.config.browser.uploads_dir is not None
        files = ChatFiles(
            self.config.files,
            self.config.browser.uploads_dir,
            dispatcher.store,
            dispatcher.browser,
            REGISTRY,
            self._file_signer,
            lambda: self.link,
        )
        self.files = files
        dispatcher.files_out, dispatcher.running.files_in = files.sender, files.receiver
        self._tasks.append(asyncio.create_task(files.sender.clean_up()))

    def _file_signer(self) -> Signer | None:
        """The identity that signs Blossom uploads and deletes, while one that signs is in."""
        login = self.identity
        return login.signer if login.logged_in and not login.readonly else None

    def _announcements(self) -> list[dict[str, Any]]:
        """Published with the link's own: the chat's Blossom server list."""
        return [] if self.files is None else self.files.announcements()

    # --- callbacks for the dispatcher --------------------------------------------------

    def _browser_event(self, event: dict[str, Any]) -> None:
        """Push the local session's events to local clients; forward watched ones by DM."""
        if self.local is not None and event["owner"] in (OWNER, "shared"):
            self.local.broadcast({"event": event["event"], "data": event["data"]})
        self.forwarder.push(event)

    async def _send_events(self, owner: str, text: str) -> None:
        if self.dispatcher is not None:
            await self.nostr.send(owner, text, self.dispatcher.delivery.scheme_of(owner))

    def signer(self) -> Signer | None:
        """The identity logged in now, which seals the API keys, the vault, the saved states
        and the conversations."""
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
        before = self.nostr.rewiring
        if tool == "login":
            result = await self.identity.login(params)
        elif tool == "switch_identity":
            result = await self.identity.switch_identity(params)
        else:
            result = await self.identity.logout()
        after = self.nostr.rewiring
        if after is not None and after is not before:  # answer once the Nostr side follows
            await after
        return result

    # --- status ------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """What ``status`` shows (``daemon.status``), read from the parts as they are now."""
        return await daemon_status(
            Running(
                identity=self.identity.status(),
                direct_messages=self.dm_state(),
                started_at=self.started_at,
                allowed=self.allowed,
                browser=self.browser,
                embedded_relay=self.embedded.url if self.embedded else None,
                link=self.link,
                dispatcher=self.dispatcher,
                store=self.store,
                worker=self.worker,
                watches=self.watches,
            )
        )

    async def _live(self) -> dict[str, Any]:
        """What the /live page shows beside the picture: the local tab, the last commands."""
        assert self.core is not None, "start() first"
        return await live_state(
            self.core.browser.existing(OWNER),
            self.core.browser.frames,
            [e.to_dict() for e in await self.core.store.recent(10)],
        )

    def dm_state(self) -> str:
        """Whether direct messages are served, and why not (``status.direct_messages``)."""
        return direct_messages(self.identity, self.config.nostr.dm)
