"""The credential vault's tools: keep logins per controller and fill them on their own origin.

``vault_add``, ``vault_list`` and ``vault_remove`` manage the caller's own entries (the owner
is the session's, never a param); ``fill_credential`` puts one value of an entry into one
field and ``login_with`` fills a whole login form and submits it.  Both refuse unless the
page's origin and the field's frame's origin are among the entry's origins, and neither ever
returns a value: the reply, the approval prompt, the audit row and the log name the entry,
the kind of value and the field (docs/vault.md).
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from playwright.async_api import BrowserContext, ElementHandle, Frame, Locator, Page
from pydantic import Field

from ..browser.checks import check_length, editable_field
from ..browser.masked import remember
from ..browser.session import Session
from ..commands.params import Target
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode
from ..vault.entry import FIELDS, Entry, Keeper, origin_of
from .interact import act_and_compare
from .recording import TRACING

TOOLS = Registry()
Part = Literal["username", "password", "totp"]
SAID = {"username": "the username", "password": "the password", "totp": "the one-time code"}
CHAT_COPY = (
    "Your chat app keeps its own copy of the message that carried these values: delete that "
    "message there (for itself and, where it offers it, for everyone). The daemon keeps only "
    "the sealed entry."
)

# The values a field may take, the one it takes by default first (docs/vault.md): a password
# only an input of type password; a one-time code an input whose autocomplete says
# one-time-code, or a numeric one (type number or tel, inputmode numeric, six digits); a
# username a text, email or tel input.  Anything else (a textarea, a contenteditable, a
# search box, a select) takes no value from the vault.
ACCEPTS_JS = """el => {
  if (el.tagName !== 'INPUT') return [];
  const type = (el.type || 'text').toLowerCase(), auto = (el.autocomplete || '').toLowerCase();
  const oneTimeCode = auto.includes('one-time-code'), digitTypes = ['text', 'tel', 'number'];
  const sixDigits = el.maxLength === 6 || ['[0-9]{6}', '\\\\d{6}'].includes(el.pattern);
  const numeric = sixDigits || ['tel', 'number'].includes(type) || el.inputMode === 'numeric';
  const accepts = [];
  if (oneTimeCode || (sixDigits && digitTypes.includes(type))) accepts.push('totp');
  if (type === 'password') accepts.push('password');
  if (!oneTimeCode && ['text', 'email', 'tel'].includes(type)) accepts.push('username');
  if (numeric && digitTypes.includes(type) && !accepts.includes('totp')) accepts.push('totp');
  return accepts;
}"""
KINDS_JS = f"els => els.map(el => ({ACCEPTS_JS})(el)[0] ?? null)"
# What a field is, for a refusal: "a textarea", "an input of type search"…
FIELD_KIND_JS = """el => el.isContentEditable ? `a contenteditable ${el.tagName.toLowerCase()}`
  : el.tagName === 'INPUT' ? `an input of type ${(el.type || 'text').toLowerCase()}`
  : `a ${el.tagName.toLowerCase()}`"""
BELONGS = {
    "username": "a text, email or tel input",
    "password": "an input of type password",
    "totp": "a one-time-code or numeric input",
}
SUBMIT_JS = "el => { if (!el.form) return false; el.form.requestSubmit(); return true; }"
# Where the field's form sends it: the form's action and every formaction of a button that
# submits it, read through the prototypes (an input named "action" cannot stand in), and
# whether any of them says method="get", which puts the fields in the page's address.
SUBMISSION_JS = """el => {
  const form = el.form;
  if (!form) return {targets: [], get: false, here: location.href};
  const read = (name, of) =>
    Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, name).get.call(of);
  const targets = [read('action', form)];
  let get = form.getAttribute('method')?.toLowerCase() === 'get';
  const controls = [...read('elements', form), ...document.querySelectorAll('input[type=image]')];
  for (const b of controls) {
    if (b.form !== form || !('formAction' in b)) continue;
    if (b.hasAttribute('formaction')) targets.push(b.formAction);
    if (b.getAttribute('formmethod')?.toLowerCase() === 'get') get = true;
  }
  return {targets, get, here: location.href};
}"""


def vault_of(session: Session) -> Keeper:
    """The daemon's vault, for a session of one controller."""
    vault = session.reach.vault
    if vault is None:
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            "The vault needs the daemon's state store and identity: its entries are sealed "
            "to the daemon's key.",
        )
    if session.config.isolation == "shared":
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            'The vault is per controller, and [browser] isolation = "shared" gives every '
            "controller one browser: use per-controller isolation to keep a vault.",
        )
    return vault


class VaultAddParams(Params):
    """A new entry: its name, origins and values (the values never come back)."""

    name: str = Field(description="letters, digits, _ or -; at most 64")
    origins: list[str] | str = Field(
        description="the origins it may be filled on (https://host[:port]; a string may list "
        "several, comma-separated); exact match, no subdomains unless listed"
    )
    username: str = Field(description="the username or email address")
    password: str = Field(description="the password; never echoed")
    totp: str = Field("", description="optional: an otpauth://totp/ URI or a base32 secret")


@TOOLS.tool(
    "vault_add",
    family="vault",
    gated=True,
    params=VaultAddParams,
    args=("name", "username", "password", "totp"),
    flags={"origin": "origins"},
    destructive=True,
    idempotent=True,
)
async def vault_add(session: Session, params: VaultAddParams) -> dict[str, Any]:
    """Keep a login in your vault, sealed to the daemon's key, for fill_credential/login_with."""
    entry = Entry.checked(
        params.name, params.origins, params.username, params.password, params.totp
    )
    added = await vault_of(session).add(session.owner, entry)
    return {"added": added, "note": CHAT_COPY}


@TOOLS.tool("vault_list", family="vault", gated=False, params=NoParams)
async def vault_list(session: Session, params: NoParams) -> dict[str, Any]:
    """Your vault's entries: names, origins, whether a TOTP is set; never a value."""
    return {"entries": await vault_of(session).entries(session.owner)}


class VaultName(Params):
    """An entry of your vault, by name."""

    name: str = Field(description="the entry's name (see vault_list)")


@TOOLS.tool(
    "vault_remove",
    family="vault",
    gated=True,
    params=VaultName,
    args=("name",),
    destructive=True,
    idempotent=True,
)
async def vault_remove(session: Session, params: VaultName) -> dict[str, Any]:
    """Forget an entry of your vault."""
    return await vault_of(session).remove(session.owner, params.name)


# --- filling ---------------------------------------------------------------------------


async def refuse_unless_home(entry: Entry, handle: ElementHandle) -> BrowserContext:
    """Refuse unless the page, the field's frame and where its form submits are all on the
    entry's origins; returns the field's browser context.

    The handle is the element in the document it was found in: should that document navigate
    away before the fill, the fill fails instead of reaching the next page.
    """
    frame = await handle.owner_frame()
    if frame is None:
        raise BrowserdError(ErrorCode.ELEMENT_NOT_FOUND, "The field is no longer on the page.")
    page = frame.page
    for where, url in (("page is on", page.url), ("field's frame is on", frame.url)):
        refuse_foreign(entry, where, url)
    submission = await handle.evaluate(SUBMISSION_JS)
    for target in submission["targets"]:
        refuse_foreign(entry, "field's form submits to", target)
    if submission["get"]:
        raise BrowserdError(
            ErrorCode.REFUSED,
            'Not filled: the field\'s form says method="get", which would put the value in the '
            "page's address, and every reply shows the address.",
        )
    if page.context in TRACING:
        raise BrowserdError(
            ErrorCode.REFUSED,
            "Not filled: a trace is recording this window, and its DOM snapshots would keep "
            "the value. trace_stop first.",
        )
    return page.context


async def fill_value(entry: Entry, handle: ElementHandle, part: str) -> dict[str, Any]:
    """Fill ``entry``'s ``part`` into the field ``handle``; says whether it took, never what."""
    await refuse_unless_fits(handle, part)
    context = await refuse_unless_home(entry, handle)
    info = await editable_field(handle, secret=True)  # type: ignore[arg-type]
    value = entry.value(part)
    check_length(info, len(value))
    remember(context, value, entry.origins)  # masked before it is on the page
    await handle.fill(value)
    if await handle.evaluate("el => el.value") == value:
        return {"filled": part, "ok": True}
    return {"filled": part, "ok": False, "note": "MISMATCH: the page changed the field's value."}


async def accepts(handle: ElementHandle | Locator) -> list[str]:
    """The values a field takes, its default first; none when it is no login field."""
    return list(await handle.evaluate(ACCEPTS_JS))


async def kind_of(handle: ElementHandle | Locator) -> str | None:
    """The value a field takes by default, or None when it is not a login field."""
    taken = await accepts(handle)
    return taken[0] if taken else None


async def refuse_unless_fits(handle: ElementHandle | Locator, part: str) -> None:
    """Refuse unless the field is the kind ``part`` belongs in: a password goes into a
    password field only, never into a box whose text a page shows or a reply reads."""
    if part not in await accepts(handle):
        raise BrowserdError(
            ErrorCode.REFUSED,
            f"Not filled: {SAID[part]} goes only into {BELONGS[part]}, and this field is "
            f"{await handle.evaluate(FIELD_KIND_JS)}.",
        )


async def submits_to(handle: ElementHandle | Locator) -> str:
    """' (careful: its form submits to https://…, not this page's origin)' for an approval
    prompt when the field's form sends it elsewhere; empty otherwise."""
    submission = await handle.evaluate(SUBMISSION_JS)
    here = origin_of(submission["here"])
    away = dict.fromkeys(origin_of(t) or repr(t[:100]) for t in submission["targets"])
    away.pop(here or "", None)
    if not away:
        return ""
    return f" (careful: its form submits to {', '.join(away)}, not this page's origin)"


class FillCredentialParams(Target):
    """A field, the vault entry to fill it from, and which of its values."""

    name: str = Field(description="the entry's name (see vault_list)")
    field: Part | None = Field(
        None,
        description="username, password or totp; by default the field decides (a password "
        "field the password, a one-time-code or 6-digit field the TOTP, else the username); "
        "each goes only into its own kind of field",
    )


async def fill_credential_prompt(session: Session, params: dict[str, Any], target: str) -> str:
    """'fill the password of `github` into textbox "Password" (@e3) on https://… (its form
    submits to https://…)'; a field the value does not belong in is refused before asking."""
    part = params.get("field")
    form = ""
    try:
        field = await session.locate(params.get("ref"), params.get("selector"))
        part = part or await kind_of(field)
        if part is not None:
            await refuse_unless_fits(field, part)
        form = await submits_to(field)
    except BrowserdError as exc:
        if exc.code == ErrorCode.REFUSED:
            raise
    what = SAID.get(part or "", "a value")
    return f"fill {what} of `{params.get('name')}` into {target} on {current_url(session)}{form}"


def current_url(session: Session) -> str:
    page = session.page_or_none
    return page.url if page is not None else "no page"


@TOOLS.tool(
    "fill_credential",
    family="vault",
    gated=True,
    params=FillCredentialParams,
    args=("target", "name", "field"),
    approval=fill_credential_prompt,
)
async def fill_credential(session: Session, params: FillCredentialParams) -> dict[str, Any]:
    """Fill a field of the value's own kind from your vault, on the entry's origin; never shown."""
    entry = await vault_of(session).open(session.owner, params.name)
    locator = await session.locate(**params.target())
    handle = await locator.element_handle()
    part = params.field or await kind_of(handle)
    if part is None:
        raise BrowserdError(
            ErrorCode.REFUSED,
            "Not a login field: name the value to fill (username, password or totp).",
        )
    return {"entry": entry.name, **await fill_value(entry, handle, part)}


# --- a login in one step ----------------------------------------------------------------


async def login_fields(scope: Page | Frame) -> dict[str, ElementHandle]:
    """The visible username, password and one-time-code fields of a login form.

    The username is the username field nearest before the password field (a search box at the
    top of the page comes before it too), else the first one; each kind's first field wins.
    """
    inputs = scope.locator("input:visible")
    kinds: list[str | None] = await inputs.evaluate_all(KINDS_JS)
    first = {k: i for i, k in reversed(list(enumerate(kinds))) if k is not None}
    if "password" in first:
        before = [i for i, k in enumerate(kinds[: first["password"]]) if k == "username"]
        if before:
            first["username"] = before[-1]
    found = {}
    for part, index in first.items():
        handle = await inputs.nth(index).element_handle()
        if handle is not None:
            found[part] = handle
    return found


async def login_with_prompt(session: Session, params: dict[str, Any], target: str) -> str:
    """'log in with `github` on https://…: …, then submit the form (its form submits to …)'."""
    form = ""
    with contextlib.suppress(BrowserdError):  # no page yet: the tool itself will say so
        fields = await login_fields(session.scope)
        form = await submits_to(fields["password"]) if "password" in fields else ""
    return (
        f"log in with `{params.get('name')}` on {current_url(session)}: fill its username, "
        f"password and one-time code where the page has fields for them, then submit the "
        f"form{form}"
    )


@TOOLS.tool(
    "login_with",
    family="vault",
    gated=True,
    params=VaultName,
    args=("name",),
    approval=login_with_prompt,
)
async def login_with(session: Session, params: VaultName) -> dict[str, Any]:
    """Fill username, password and TOTP from your vault where the page has them, and submit."""
    entry = await vault_of(session).open(session.owner, params.name)
    fields = await login_fields(session.scope)
    if not entry.totp:
        fields.pop("totp", None)
    if not fields:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND, "No username, password or one-time-code field here."
        )
    filled: list[str] = []
    for part in FIELDS:
        if part in fields:
            done = await fill_value(entry, fields[part], part)
            if not done["ok"]:
                note = f"{done['note']} ({SAID[part]}); nothing was submitted"
                return {"entry": entry.name, "filled": filled, "submitted": False, "note": note}
            filled.append(part)
    last = fields[[p for p in FIELDS if p in fields][-1]]
    await refuse_unless_home(entry, last)  # the page may have moved its form meanwhile

    async def submit() -> None:
        if not await last.evaluate(SUBMIT_JS):
            await last.press("Enter")

    outcome = await act_and_compare(session, submit())
    return {"entry": entry.name, "filled": filled, "submitted": True, **outcome}


def refuse_foreign(entry: Entry, where: str, url: str) -> None:
    """``REFUSED`` unless ``url`` is on one of ``entry``'s origins, naming the one it is on."""
    seen = origin_of(url)
    if seen not in entry.origins:
        raise BrowserdError(
            ErrorCode.REFUSED,
            f"Not filled: the {where} {seen or repr(url[:100])}, and {entry.name!r} belongs to "
            f"{', '.join(entry.origins)}.",
        )
