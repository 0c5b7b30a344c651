"""The door every action goes through (browser/actions.py): each start and end told once.

What will follow every action (recording) observes a session's ``actions``: a command, each
command of a batch and a failing command are each announced once as they start and once as
they end, with the error when one failed.  A tool that needs no session (help) is no action,
and an observer that raises changes no reply.
"""

from nostr_browserd.browser.actions import Action


class Told:
    """An observer that keeps what it hears, and one that breaks when asked to."""

    def __init__(self, breaks: bool = False) -> None:
        self.heard: list[tuple[str, str, str | None]] = []
        self.breaks = breaks

    def started(self, action: Action) -> None:
        self.heard.append(("start", action.tool, None))
        if self.breaks:
            raise RuntimeError("a broken observer")

    def ended(self, action: Action, error: BaseException | None) -> None:
        self.heard.append(("end", action.tool, type(error).__name__ if error else None))


async def test_every_action_is_told_once_as_it_starts_and_ends(call, session, site_url):
    told, broken = Told(), Told(breaks=True)
    stop = session.actions.observe(told)
    session.actions.observe(broken)
    try:
        assert (await call(f"open {site_url}/buttons.html"))["success"]
        assert (await call("help click"))["success"]
        batch = {
            "tool": "batch",
            "params": {
                "commands": [
                    {"tool": "click", "params": {"selector": "#count"}},
                    {"tool": "get_text", "params": {"selector": "#count"}},
                ]
            },
        }
        assert (await call(batch))["data"]["results"][1]["data"]["text"] == "Clicked 1"
        failed = await call("click #nothing-here")
        assert failed["error"]["code"] == "ELEMENT_NOT_FOUND"
    finally:
        stop()
    assert told.heard == [
        ("start", "open", None),
        ("end", "open", None),
        ("start", "batch", None),
        ("start", "click", None),
        ("end", "click", None),
        ("start", "get_text", None),
        ("end", "get_text", None),
        ("end", "batch", None),
        ("start", "click", None),
        ("end", "click", "BrowserdError"),
    ]
    assert broken.heard == told.heard, "a broken observer is still told, and breaks nothing"
    assert (await call("get title"))["success"] and len(told.heard) == 10, "stopped: not told"
