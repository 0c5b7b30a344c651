"""What a log, the audit store, the status page or an approval prompt may show of a command.

One walk over every nested command: a batch's ``commands`` (a list, or the one JSON string the
text grammar carries), ``set_headers``' headers (a dict, or JSON in text), a find's action
value.  What it hides:

- keys named like secrets (``password``, ``token``, ``nsec``…, and the vault's ``username``
  and ``totp``) and strings that look like keys or bunker URLs, everywhere;
- the values of credential headers (``Authorization: Bearer …``, ``Cookie``, ``X-Api-Key``…);
- typed text (``value``, ``text``): whether a field is a password is only known once the tool
  has looked at the page, after the command was logged, so logs, the audit store and status
  show only its length.  An approval prompt is different: the approver must see what will be
  typed into an IBAN or an address field before saying yes, so there only a command marked
  ``secret`` keeps it hidden (a password field refuses typed text without that mark).

``scrub`` is the other direction: what the vault filled into a page, taken out of whatever
comes back from it (a reply, a model's request), however the page copied it.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
TYPED_KEYS = ("value", "text")
JSON_KEYS = ("commands", "headers")  # params the text grammar carries as one JSON string
_SECRET_KEY = re.compile(
    r"nsec|mnemonic|seed|passphrase|passwd|password|secret|bunker|token|private|credential"
    r"|passcode|api.?key|totp|cvv|cvc|username",
    re.I,
)
# Short names that are secrets only as a whole word of the key: "otp_code", "pin", "mfaCode"
# (never "footprint" or "spinner").
_SECRET_WORDS = frozenset({"otp", "pin", "mfa", "2fa", "pwd", "pass"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+[a-z]*")
_CREDENTIAL_HEADER = re.compile(r"auth|cookie|token|secret|api.?key|session|password", re.I)
# Also the model providers' API keys: sk-ant-…, sk-or-…, sk-proj-…, sk-….
_SECRET_VALUE = re.compile(
    r"nsec1[02-9ac-hj-np-z]{20,}|bunker://\S+|[0-9a-fA-F]{64}|\bsk-[A-Za-z0-9_-]{16,}"
)


def secret_key(name: str) -> bool:
    """Whether a parameter called ``name`` holds a secret: ``password``, ``api_key``,
    ``totp``, ``otp_code``, ``pin``…"""
    if _SECRET_KEY.search(name):
        return True
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


def redact(params: Any, *, show_typed: bool = False) -> Any:
    """A copy of ``params`` fit to be shown; nested commands are redacted the same way.

    ``show_typed`` is for approval prompts only: typed text then shows unless its command
    says ``secret``.
    """
    return _walk(params, show_typed, hidden=False)


def _walk(value: Any, show_typed: bool, hidden: bool) -> Any:
    if isinstance(value, dict):
        return _walk_dict(value, show_typed, hidden)
    if isinstance(value, list):
        return [_walk(v, show_typed, hidden) for v in value]
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value)
    return value


def _walk_dict(params: dict[Any, Any], show_typed: bool, hidden: bool) -> dict[Any, Any]:
    # A command's own ``secret`` flag hides its typed text; so does an enclosing one.
    hidden = hidden or params.get("secret") is True
    out: dict[Any, Any] = {}
    for key, value in params.items():
        name = str(key)
        if name in JSON_KEYS and isinstance(value, str):
            value = _parsed(value)
        if secret_key(name) and not isinstance(value, bool):
            out[key] = REDACTED
        elif name in TYPED_KEYS and isinstance(value, str):
            shown = show_typed and not hidden
            out[key] = _SECRET_VALUE.sub(REDACTED, value) if shown else f"[{len(value)} chars]"
        elif name == "headers" and isinstance(value, dict):
            out[key] = {
                header: REDACTED
                if _CREDENTIAL_HEADER.search(str(header))
                else _walk(v, False, True)
                for header, v in value.items()
            }
        else:
            out[key] = _walk(value, show_typed, hidden)
    return out


def _parsed(text: str) -> Any:
    """A batch's commands or headers sent as JSON text, as the structure they are.

    Text that is not JSON will not run either, but may still hold a secret: only its size
    is shown.
    """
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return f"[{len(text)} chars, not JSON]"


def redact_headers(headers: dict[Any, Any]) -> dict[Any, Any]:
    """HTTP headers with the values of credentials (``Authorization``, ``Cookie``…) hidden.

    Names stay, so an approver or a request log still shows that such a header is there.
    """
    return {k: REDACTED if _CREDENTIAL_HEADER.search(str(k)) else v for k, v in headers.items()}


# What a value filled from the vault is shown as, wherever a reply would have carried it.
MASK = "••••••••"


def spellings(value: str) -> set[str]:
    """The ways a page's text, markup or address may carry ``value``: as it is, HTML-escaped
    (an attribute), JSON-escaped (a script), percent-encoded (a form's URL)."""
    return {value, escape(value), escape(value, quote=False), json.dumps(value)[1:-1]} | {
        quote(value, safe=""),
        quote_plus(value),
    }


def scrub(value: Any, secrets: set[str] | frozenset[str]) -> Any:
    """A copy of ``value`` with every spelling of each of ``secrets`` replaced by ``MASK``.

    Strings anywhere inside dicts and lists, keys included; ``base64`` payloads (a picture,
    a PDF) are left whole, since a chance match would break them, and are masked apart.
    """
    if not secrets:
        return value
    forms = sorted({form for secret in secrets if secret for form in spellings(secret)}, key=len)
    pattern = re.compile("|".join(re.escape(form) for form in reversed(forms)))
    return _scrub(value, pattern)


def _scrub(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(MASK, value)
    if isinstance(value, dict):
        return {
            _scrub(k, pattern): v if k == "base64" else _scrub(v, pattern) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_scrub(v, pattern) for v in value]
    return value
