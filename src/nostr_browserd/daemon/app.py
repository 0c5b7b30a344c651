"""The daemon: login, relays, inbox, dispatcher, outbox, browser and local channel, joined.

Start order: state store → identity → (embedded relay) → browser → relay pool → inbox
subscription → announcements (kind 10050, 10002, 0) → local channel → ``READY=1``.
Stop order is the reverse, after the dispatcher has finished the running commands and sent
their replies.  A read-only identity starts everything except the inbox: it serves the local
channel and status, and says plainly that it cannot read or answer direct messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..agent.keys import KeyStore
from ..browser.session import BrowserPool
from ..commands.catalog import REGISTRY
from ..errors import BrowserdError
from ..login.manager import IdentityManager
from ..login.readonly import READ_ONLY_MESSAGE
from ..nostr import nip17
from ..nostr.nip01 import now
from ..nostr.nip19 import npub_encode
from ..nostr.relay import RelayPool, Subscription
from ..nostr.signer import Signer
from ..supervise import stopped_readers, supervise
from .ask import AskRunner, check_ask_config
from .config import Config, ConfigError, IdentityConfig, load_config, make_browser_dirs
from .dispatch import Dispatcher
from .embedded_relay import EmbeddedRelay
from .inbox import Inbox, Scheme, subscription_filters
from .keyfile import DEFAULT_IDENTITY_FILE, ensure_key
from .keys_cli import KEY_TOOLS, run_key_tool
from .local_ws import OWNER, LocalServer, load_token
from .notify import notify, watchdog, watchdog_interval
from .outbox import Outbox
from .push import EventForwarder
from .store import Store

log = logging.getLogger(__name__)

RELAY_LIST_KIND = 10002
PROFILE_KIND = 0


def login_params(identity: IdentityConfig, state_dir: Path) -> dict[str, Any]:
    """The ``login`` params for the configured identity.

    A local identity with no key configured (file, environment variable or systemd
    credential) uses a key generated once into the state directory.
    """
    method = identity.method
    if method == "local" and identity.nsec_env:
        return {"method": "local", "nsec_env": identity.nsec_env}
    if method == "local" and identity.credential:
        return {"method": "local", "credential": identity.credential}
    if method == "local":
        path = identity.nsec_file or state_dir / DEFAULT_IDENTITY_FILE
        if identity.nsec_file is None and ensure_key(path):
            log.warning("generated a new identity in %s (mode 0600)", path)
        return {"method": "local", "nsec_file": str(path)}
    if method == "seed":
        params = {
            "method": "seed",
            "seed_file": str(identity.seed_file),
            "account": identity.account,
        }
        if identity.passphrase_file:
            params["passphrase_file"] = str(identity.passphrase_file)
        return params
    if method == "readonly":
        return {"method": "readonly", "npub": identity.npub}
    if method == "nip46" and identity.bunker_url_file:
        return {"method": "nip46", "bunker_url_file": str(identity.bunker_url_file)}
    if method == "nip46":
        return {"method": "nip46", "bunker_url": identity.bunker_url}
    n = identity.nsigner
    return {"method": "nsigner", "device": n.device, "service": n.service, "index": n.index}


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
        self.pool: RelayPool | None = None
        self.discovery: RelayPool | None = None
        self.outbox: Outbox | None = None
        self.dispatcher: Dispatcher | None = None
        self.local: LocalServer | None = None
        self.local_token_path: Path | None = None
        self.forwarder = EventForwarder(self._send_events)
        self._tasks: list[asyncio.Task[Any]] = []
        self._nostr_tasks: list[asyncio.Task[Any]] = []
        self._inbox_sub: Subscription | None = None
        self._inbox: Inbox | None = None
        self._stop = asyncio.Event()
        self._rewiring: asyncio.Task[None] | None = None
        self._follow: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Bring everything up; raises with a clear message when something cannot start."""
        check_ask_config(self.config, REGISTRY)
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        make_browser_dirs(self.config.browser)
        self.store = Store(self.state_dir / "state.sqlite3")
        await self.identity.login(login_params(self.config.identity, self.state_dir))
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
        )
        self.dispatcher.asker = AskRunner(
            self.dispatcher,
            self.store,
            self.config.ask,
            self.key_store,
            REGISTRY,
            self.config.browser.result_cap,
        )
        await self._connect_nostr()
        if self.outbox is not None:  # what a killed daemon left unanswered
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
            )
            await self.local.start()
            self.browser.policy.deny_port(self.local.port)  # no page reaches the status page
        self._tasks.append(asyncio.create_task(self._prune_store()))
        interval = watchdog_interval()
        if interval:
            self._tasks.append(asyncio.create_task(watchdog(interval, stopped_readers)))
        notify("READY=1")
        notify(f"STATUS=serving as {self.npub}")

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
        if self._inbox_sub is not None:
            self._inbox_sub.close()
        if self.dispatcher is not None:
            await self.dispatcher.close()
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
            self.store.close()
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
        if self.outbox is not None:  # follow the new list's DM inbox relays
            if self._follow is not None:
                self._follow.cancel()
                self._nostr_tasks.remove(self._follow)
            self._follow = asyncio.create_task(self._follow_controller_inboxes())
            self._nostr_tasks.append(self._follow)

    async def _prune_store(self) -> None:
        """Hourly: forget seen and rejected ids older than the retention (far beyond any
        relay's re-delivery), and keep the rejected ids and the audit log within their bounds."""
        assert self.store is not None
        state = self.config.state
        while True:
            try:
                pruned = self.store.prune(state.seen_retention)
                pruned += self.store.trim(
                    max_rejected=state.rejected_max_ids,
                    audit_age=state.audit_retention,
                    max_audit=state.audit_max_rows,
                )
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
            log.warning("not logged in: direct messages are off until login on the local channel")
            return
        signer: Signer = self.identity.signer
        pubkey = await signer.public_key()
        if self.identity.readonly:
            log.warning("%s", READ_ONLY_MESSAGE)
            self.pool = RelayPool(self.relays)
            await self.pool.start()
            return
        self.pool = RelayPool(self.relays, auth_signer=signer)
        await self.pool.start()
        self.outbox = Outbox(signer, self.pool, timeout=self.config.nostr.publish_timeout)
        assert self.dispatcher is not None and self.store is not None
        inbox = Inbox(
            signer,
            pubkey,
            self.store,
            is_known=self.dispatcher.is_known,
            schemes=self.config.nostr.dm,
            freshness=self.config.nostr.freshness,
            stranger_budget=self.config.nostr.stranger_budget,
        )
        self._inbox = inbox
        filters = subscription_filters(
            pubkey, self.config.nostr.dm, now(), self.config.nostr.freshness
        )
        self._inbox_sub = sub = self.pool.subscribe(filters, advance_since=False)
        read = supervise("inbox", lambda: self._read_inbox(inbox, sub), finished=lambda: sub.closed)
        self._nostr_tasks.append(read)
        if self.config.nostr.discovery_relays:
            self.discovery = RelayPool(self.config.nostr.discovery_relays)
            await self.discovery.start()
        self._nostr_tasks.append(asyncio.create_task(self._announce(signer)))
        self._follow = asyncio.create_task(self._follow_controller_inboxes())
        self._nostr_tasks.append(self._follow)
        log.info(
            "listening for %s on %s as %s",
            "/".join(self.config.nostr.dm),
            self.relays,
            npub_encode(pubkey),
        )

    async def _disconnect_nostr(self) -> None:
        if self._inbox_sub is not None:
            self._inbox_sub.close()
            self._inbox_sub = None
            self._inbox = None
        for task in self._nostr_tasks:
            task.cancel()
        await asyncio.gather(*self._nostr_tasks, return_exceptions=True)
        self._nostr_tasks.clear()
        self._follow = None
        if self.outbox is not None:
            await self.outbox.close()
            self.outbox = None
        for pool in (self.pool, self.discovery):
            if pool is not None:
                await pool.close()
        self.pool = self.discovery = None

    async def _read_inbox(self, inbox: Inbox, sub: Subscription) -> None:
        """Drain the subscription into the inbox's backlog; a second task opens what waits."""
        assert self.dispatcher is not None
        opening = asyncio.create_task(inbox.serve(self.dispatcher.submit))
        try:
            async for event in sub:
                try:
                    inbox.take(event)
                except Exception:  # one bad event must never stop the inbox
                    log.exception("could not sort event %s", str(event.get("id", "?"))[:12])
        finally:
            opening.cancel()
            await asyncio.gather(opening, return_exceptions=True)

    async def _announce(self, signer: Signer) -> None:
        """Publish kind 10050 and 10002 (where to reach us) and kind 0 (who we are).

        Clients that speak only NIP-17 refuse to send to a key without a kind 10050, so
        these go to our relays and to the discovery relays (indexers) too.
        """
        nostr = self.config.nostr
        public = [url for url in self.relays if not url.startswith("ws://127.")] or self.relays
        templates = [
            nip17.inbox_relays_event_template(public),
            {
                "kind": RELAY_LIST_KIND,
                "content": "",
                "tags": [["r", url] for url in public],
                "created_at": now(),
            },
            {
                "kind": PROFILE_KIND,
                "content": json.dumps({"name": nostr.name, "about": nostr.about, "bot": True}),
                "tags": [],
                "created_at": now(),
            },
        ]
        for template in templates:
            try:
                event = await signer.sign_event(template)
                for pool in (self.pool, self.discovery):
                    if pool is not None:
                        result = await pool.publish(event, nostr.publish_timeout)
                        if not result.ok:
                            log.warning("kind %s not accepted: %s", event["kind"], result.refused)
            except Exception:
                log.exception("could not publish kind %s", template["kind"])

    async def _follow_controller_inboxes(self) -> None:
        """Learn controllers' kind 10050 DM inbox relays so replies also reach them there."""
        authors = list(self.config.allowed())
        if not authors or self.pool is None:
            return
        filters = [{"kinds": [nip17.DM_RELAYS_KIND], "authors": authors}]
        subs = [p.subscribe(filters) for p in (self.pool, self.discovery) if p is not None]
        try:
            await asyncio.gather(*(self._learn(sub) for sub in subs))
        finally:
            for sub in subs:
                sub.close()

    async def _learn(self, sub: Subscription) -> None:
        async for event in sub:
            if self.outbox is not None:
                await self.outbox.learn_inbox(event)

    def _identity_changed(self, status: dict[str, Any]) -> None:
        """After login/switch/logout on the local channel, rebuild the Nostr side."""
        if self._stop.is_set():
            return

        async def rewire() -> None:
            await self._disconnect_nostr()
            await self._connect_nostr()

        self._rewiring = asyncio.create_task(rewire())

    # --- callbacks for the dispatcher --------------------------------------------------

    async def _reply(self, incoming: Any, text: str, request_id: Any) -> bool:
        if self.outbox is None:
            return False
        return await self.outbox.reply(incoming, text, request_id)

    async def _send(self, recipient: str, text: str, scheme: Scheme) -> bool:
        if self.outbox is None:
            return False
        return await self.outbox.send(recipient, text, scheme=scheme)

    def _browser_event(self, event: dict[str, Any]) -> None:
        """Push the local session's events to local clients; forward watched ones by DM."""
        if self.local is not None and event["owner"] in (OWNER, "shared"):
            self.local.broadcast({"event": event["event"], "data": event["data"]})
        self.forwarder.push(event)

    async def _send_events(self, owner: str, text: str) -> None:
        if self.dispatcher is not None:
            await self._send(owner, text, self.dispatcher.scheme_of(owner))

    def key_store(self) -> KeyStore:
        """The API keys of ``ask``, encrypted through the identity logged in now."""
        signer = self.identity.signer if self.identity.logged_in else None
        return KeyStore(self.state_dir, signer)

    async def _local_tool(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """Login and API-key tools: on the local channel only."""
        if tool in KEY_TOOLS:
            return await run_key_tool(self.key_store(), tool, params)
        if tool == "login_status":
            return self.identity.status()
        if tool == "login":
            return await self.identity.login(params)
        if tool == "switch_identity":
            return await self.identity.switch_identity(params)
        return await self.identity.logout()

    # --- status ------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Identity, relays and their state, controllers, queues, recent commands."""
        login = self.identity.status()
        relays = {}
        if self.pool is not None:
            for url, st in self.pool.status().items():
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
            "direct_messages": self._dm_state(),
            "relays": relays,
            "embedded_relay": self.embedded.url if self.embedded else None,
            "controllers": controllers,
            "browser": {"alive": self.browser.alive, "sessions": len(self.browser.sessions())},
            "tabs": self._tabs(),
        }
        if self.dispatcher is not None:
            status.update(self.dispatcher.status())
        if self._inbox is not None:
            status["inbox"] = self._inbox.status()
        if self.store is not None:
            status["store"] = self.store.counts()
            status["recent"] = [e.to_dict() for e in self.store.recent(10)]
        return status

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

    def _dm_state(self) -> str:
        if not self.identity.logged_in:
            return "off: not logged in"
        if self.identity.readonly:
            return "off: " + READ_ONLY_MESSAGE
        return "on: " + ", ".join(self.config.nostr.dm)
