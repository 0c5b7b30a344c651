"""A tab's title, reported by its page over a CDP binding the tab holds: no round trip a load.

Every top document reports its title from its load on, whenever it changes, so a result's
state can carry it without a round trip to the page.  It observes only where the title lives
(the document, its root, the head and the <title>): a whole-document observer slowed big
pages' loads by 12%.  The first report comes when the load event begins (ours is its first
listener), marked as the load's; what the page's own load handlers change is reported as they
change it.  All of it arrives before Playwright's load event, so a load or ``open`` announces
the title the page has after its load handlers without asking the page once more.  Nothing is
reported while the document is parsed; before the load's report, a command asks the page
(``Tab.read_title``).

The report is a ``Runtime.bindingCalled`` event on a CDP session of the tab's own: one message
from the driver, nothing sent back.  Playwright's ``expose_binding`` cost every report a round
trip (five driver messages: the call's object, its event, the answer, its reply and the
object's disposal, then an evaluation in the page to deliver an answer nobody awaits) and
every document of every frame its 12 KB bindings controller script.  Chromium adds a binding
to a new document only for a session with ``Runtime`` enabled, which costs that session four
context events a navigation (cleared twice, the page's world and Playwright's utility world
created), none answered: per navigation of the Django admin, 0.3–0.6 ms less of the daemon's
CPU and 3–5 ms less of the whole tree's (Chromium, the driver, the daemon) than the binding it
replaces (docs/benchmarks.md).

The init script runs in every document of the window, but observes only where the binding is
there when it runs.  A document that existed before the tab's binding (a new tab's blank one,
a popup's first) is observed once the binding is added (``observe``), and one that had loaded
then reports at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from playwright.async_api import CDPSession, Page

TITLE_BINDING = "__browserdTitle"
# Observes a top document once: the binding function is marked when it does.
TITLE_OBSERVER = f"""(() => {{
  if (window.top !== window) return;
  const binding = window.{TITLE_BINDING};
  if (typeof binding !== "function" || binding.observing) return;
  binding.observing = true;
  const report = (title, atLoad) => binding(JSON.stringify([title, atLoad === true]));
  const observe = (atLoad) => {{
    let last = document.title;
    report(last, atLoad);
    const observer = new MutationObserver(() => watch());
    const watch = () => {{
      observer.disconnect();
      for (const node of [document, document.documentElement, document.head]) {{
        if (node) observer.observe(node, {{childList: true}});
      }}
      const title = document.querySelector("title");
      if (title) observer.observe(title, {{childList: true, characterData: true, subtree: true}});
      if (document.title !== last) {{ last = document.title; report(last); }}
    }};
    watch();
  }};
  if (document.readyState === "complete") observe(false);  // a new tab's blank document
  else addEventListener("load", () => observe(true), true);
}})()"""

Report = Callable[[str, bool], None]  # (title, at_load)


async def observe(page: Page, report: Report) -> CDPSession:
    """Hear ``page``'s title reports from now on, its current document's too; the session
    they come on (closed with the page)."""
    session = await page.context.new_cdp_session(page)
    session.on("Runtime.bindingCalled", lambda event: _heard(event, report))
    # Together (the binding is added to the documents there are either way); the observer
    # once the binding is there.
    await asyncio.gather(
        session.send("Runtime.enable"),
        session.send("Runtime.addBinding", {"name": TITLE_BINDING}),
    )
    await session.send("Runtime.evaluate", {"expression": TITLE_OBSERVER})
    return session


def _heard(event: dict[str, Any], report: Report) -> None:
    """One report; anything else the page sent on the binding is ignored."""
    if event.get("name") != TITLE_BINDING:
        return
    with contextlib.suppress(KeyError, ValueError, TypeError):
        title, at_load = json.loads(event["payload"])
        if isinstance(title, str):
            report(title, at_load is True)
