"""``ask`` in the daemon: a controller's turn of the model loop, joined to the dispatcher.

The turn runs in the controller's own browser session and queue; each tool call goes back
through ``Dispatcher.agent_step`` (role, consent, timeout, audit), exactly like a command
the controller sent.  The conversation is kept per controller in the state store, so the
next ``ask`` continues it after a restart too; ``ask --new`` forgets it.  Progress reaches
the controller as a few coalesced DMs; the final reply has the status, the answer and the
steps, in the request's scheme.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..agent.command import AskParams
from ..agent.keys import KeyStore
from ..agent.loop import Denied, Outcome, TimedOut, Turn, TurnResult, trim, without_images
from ..agent.progress import Progress
from ..agent.providers import ProviderSettings, ToolCall, ToolSpec, make_provider
from ..agent.tools import DEFAULT_TOOLS, Snapshots, progress_line, tool_specs, unknown_tools
from ..browser.masked import filled_in
from ..commands.protocol import Request
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..redact import scrub
from ..tools.record import recording_result
from ..waits import set_within
from .admission import permits
from .config import AskConfig, Config, ConfigError, ControllerConfig
from .delivery import error_response
from .dispatch import Dispatcher
from .store import Store

log = logging.getLogger(__name__)

MAX_TRANSCRIPT_CHARS = 400_000

HANDOFF = ToolSpec(
    "handoff",
    "Hand the browser to the person for what only they can do (a CAPTCHA, a 2FA code, a "
    "login, a choice you must not make). The turn waits until they send resume; the result "
    "is the page as they left it.",
    {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "what they need to do"}},
        "required": ["reason"],
    },
)


def check_ask_config(config: Config, registry: Registry) -> None:
    """Refuse at start a tool list or an auto_approve naming what ask cannot offer."""
    unknown = unknown_tools(registry, config.ask.tools or ())
    if unknown:
        raise ConfigError(f"ask.tools: not tools ask may offer: {', '.join(unknown)}")
    for controller in config.controllers:
        unknown = unknown_tools(registry, controller.ask.auto_approve)
        if unknown:
            raise ConfigError(
                f"controllers ({controller.name or controller.pubkey[:12]}).ask.auto_approve: "
                f"unknown tools: {', '.join(unknown)}"
            )


class AskRunner:
    """Runs ``ask`` turns for the dispatcher, one per controller at a time."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        store: Store,
        config: AskConfig,
        keys: Callable[[], KeyStore],
        registry: Registry,
        result_cap: int,
    ) -> None:
        self.dispatcher, self.store, self.config = dispatcher, store, config
        self.keys, self.registry, self.result_cap = keys, registry, result_cap
        self._stops: dict[str, asyncio.Event] = {}
        self._handoffs: dict[str, asyncio.Event] = {}

    def handing_over(self, owner: str) -> bool:
        """Whether ``owner``'s turn waits for them to send ``resume``."""
        return owner in self._handoffs

    def stop_all(self) -> None:
        """End every running turn (the daemon is stopping)."""
        for event in self._stops.values():
            event.set()

    async def run(
        self, owner: str, request: Request, controller: ControllerConfig
    ) -> dict[str, Any]:
        """One turn (or ``--new`` alone); the reply's data: status, answer, reason, steps.
        ``ask --stop`` ends the running turn, ``resume`` gives back a handed-over one: both
        come here at once, not behind the turn (``dispatch.controls_turn``)."""
        if request.tool == "resume":
            resumed = _set(self._handoffs.get(owner))
            note = (
                "The model has the browser again."
                if resumed
                else "No ask turn waits for you: resume gives back the browser after the"
                " model handed it to you (handoff)."
            )
            return {"id": request.id, "success": True, "data": {"resumed": resumed, "note": note}}
        _, model = self.registry.validate("ask", request.params)
        assert isinstance(model, AskParams)
        if model.stop:
            stopped = _set(self._stops.get(owner))
            note = "Stopping the running ask turn." if stopped else "No ask turn is running."
            return {"id": request.id, "success": True, "data": {"stopped": stopped, "note": note}}
        if owner in self._handoffs:  # its commands run beside the paused turn: not another
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                "An ask turn waits for you: send resume, or ask --stop, first.",
            )
        if owner in self._stops:  # one turn per controller (a lane runs one; the local channel
            raise BrowserdError(  # has none)
                ErrorCode.UNAVAILABLE,
                "Your ask turn is still running: wait for its reply, or send ask --stop.",
            )
        stop = self._stops[owner] = asyncio.Event()  # taken before any wait: no twin starts
        try:
            return await self._ask(owner, request, controller, model, stop)
        finally:
            del self._stops[owner]

    async def _ask(
        self,
        owner: str,
        request: Request,
        controller: ControllerConfig,
        model: AskParams,
        stop: asyncio.Event,
    ) -> dict[str, Any]:
        """The turn ``run`` admitted (``stop`` ends it), or ``--new`` alone."""
        if model.new:
            await self.store.forget_conversation(owner)
        if not model.task:
            if model.new:
                note = "A new conversation starts with your next ask."
                return {"id": request.id, "success": True, "data": {"note": note}}
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "ask needs a task: ask <what to do>.")
        recording = model.record or controller.ask.record
        session = await self.dispatcher.browser.session(owner) if recording else None
        if session is not None:
            await session.start_recording(session.config.record)
        try:
            result = await self._turn(owner, controller, model, stop)
        finally:
            replay = await session.stream.stop_recording() if session is not None else None
        log.info(
            "ask from %s: %s after %d step(s)%s",
            owner[:12],
            result.status,
            len(result.steps),
            f" ({result.reason})" if result.reason else "",
        )
        data = scrub(result.to_dict(), self.filled(owner))
        if session is not None and replay is not None:  # the turn's replay: video and sheet
            data |= recording_result(session, replay, None, sheet=True)
        return {"id": request.id, "success": True, "data": data}

    def filled(self, owner: str) -> frozenset[str]:
        """The values the vault filled into ``owner``'s windows (browser/masked.py)."""
        session = self.dispatcher.browser.existing(owner)
        return frozenset() if session is None else filled_in(session.windows.values())

    async def _hand_over(self, owner: str, reason: str) -> Outcome:
        """Pause the turn until the person sends ``resume`` (their commands run meanwhile,
        in the lane beside it); then, after those they sent before it, the page as they left
        it.  ``ask --stop`` ends the wait (the loop's stop), and so does the timeout."""
        event = self._handoffs[owner] = asyncio.Event()
        await self._mark(owner, f"handed to the person: {reason or 'no reason given'}")
        try:
            screen = await self.dispatcher.show_screen(owner)
            wait = self.config.handoff_timeout
            await self.dispatcher.notify(
                owner,
                f"The model hands you the browser: {reason or 'no reason given'}."
                + (f" Screenshot: {screen}." if screen else "")
                + f" Your commands run now. When you are done, send: resume"
                f" (or ask --stop to end the turn). It waits {wait:g} s.",
            )
            if not await set_within(event, wait):
                raise TimedOut(f"nobody sent resume within {wait:g} s of the handoff")
        finally:
            del self._handoffs[owner]
            await self.dispatcher.hand_back(owner)
        await self._mark(owner, "the person gave the browser back")
        page = await self.dispatcher.page_now(owner)
        note = "The person is done and gave the browser back; the page as it is now follows."
        return Outcome({**page, "data": {"note": note, **(page.get("data") or {})}})

    async def _mark(self, owner: str, text: str) -> None:
        """A step of a recorded turn that is no tool call: the handoff and its end."""
        session = await self.dispatcher.browser.session(owner)
        if session.stream.recorder is not None:
            session.stream.recorder.begin(text)
            session.stream.recorder.end()

    async def _turn(
        self, owner: str, controller: ControllerConfig, ask: AskParams, stop: asyncio.Event
    ) -> TurnResult:
        name = ask.provider or self.config.provider
        key = await self.keys().get(name)
        if key is None:
            return TurnResult(
                "error",
                "",
                reason=f"no usable API key for {name}: on the daemon's machine run "
                f"'nostr-browserd keys set {name}' (key on stdin)",
            )
        overrides = getattr(self.config, name)
        provider = make_provider(
            ProviderSettings(
                name,
                key,
                model=ask.model or overrides.model,
                base_url=overrides.base_url,
                timeout=self.config.timeout,
                max_retries=self.config.max_retries,
                max_tokens=self.config.max_tokens,
            )
        )
        names = self.config.tools or DEFAULT_TOOLS
        specs = tool_specs(
            self.registry, [n for n in names if permits(self.registry, controller.role, n, {})]
        )
        if self.dispatcher.in_chat(owner):  # someone there to hand over to, who can resume
            specs.append(HANDOFF)
        offered = {spec.name for spec in specs}
        cap = ask.max_tool_calls or self.config.max_tool_calls
        progress = Progress(
            lambda text: self.dispatcher.notify(owner, text), self.config.progress_interval
        )
        calls = 0
        snapshots = Snapshots()

        async def act(call: ToolCall, reason: str) -> Outcome:
            outcome = await run_call(call, reason)
            snapshots.saw(outcome.response)
            return outcome

        async def run_call(call: ToolCall, reason: str) -> Outcome:
            nonlocal calls
            if call.name not in offered:
                error = BrowserdError(
                    ErrorCode.UNKNOWN_TOOL, f"{call.name} is not one of the tools offered."
                )
                return Outcome(error_response(None, error))
            calls += 1
            if call.name == HANDOFF.name:
                return await self._hand_over(owner, reason or str(call.args.get("reason", "")))
            step = progress_line(call.name, "", call.args)
            progress.note(f"{step} ({calls} of {cap} steps)")
            request = Request(tool=call.name, params=snapshots.params(call.name, call.args))
            try:
                response, target = await self.dispatcher.agent_step(
                    owner, controller, request, reason
                )
            except BrowserdError as exc:
                if exc.code == ErrorCode.DENIED:
                    raise Denied(exc.message) from None
                return Outcome(error_response(None, exc))
            return Outcome(response, target)

        transcript = await self.store.conversation(owner)
        turn = Turn(
            provider,
            transcript,
            specs,
            act,
            max_tool_calls=cap,
            result_cap=self.result_cap,
            on_text=progress.text,
            stop=stop,
            secrets=lambda: self.filled(owner),
        )
        try:
            return await turn.run(ask.task or "")
        finally:
            await progress.close()
            await provider.close()
            kept = trim(without_images(transcript), MAX_TRANSCRIPT_CHARS)
            await self.store.save_conversation(owner, kept)


def _set(event: asyncio.Event | None) -> bool:
    """Set ``event``; False when there is none (no turn, or none handed over)."""
    if event is None:
        return False
    event.set()
    return True
