"""What a log, the audit store or an approval prompt may show of a command's params.

A typed value can be a password even when nobody said so: whether a field is a password is
only known once the tool has looked at the page, after the command was logged.  So the text
a command would put into the page (``value``, ``text``) is never shown, only its length; keys
named like secrets are hidden whole, and so are strings that look like keys or bunker URLs.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
TYPED_KEYS = ("value", "text")
_SECRET_KEY = re.compile(
    r"nsec|mnemonic|seed|passphrase|password|secret|bunker|token|private|credential|api.?key",
    re.I,
)
# Also the model providers' API keys: sk-ant-…, sk-or-…, sk-proj-…, sk-….
_SECRET_VALUE = re.compile(
    r"nsec1[02-9ac-hj-np-z]{20,}|bunker://\S+|[0-9a-fA-F]{64}|\bsk-[A-Za-z0-9_-]{16,}"
)


def redact(params: Any) -> Any:
    """A copy of ``params`` fit for a log; nested commands (batch) are redacted too."""
    if isinstance(params, dict):
        out = {}
        for key, value in params.items():
            if _SECRET_KEY.search(str(key)) and not isinstance(value, bool):
                out[key] = REDACTED
            elif key in TYPED_KEYS and isinstance(value, str):
                out[key] = f"[{len(value)} chars]"
            else:
                out[key] = redact(value)
        return out
    if isinstance(params, list):
        return [redact(v) for v in params]
    if isinstance(params, str):
        return _SECRET_VALUE.sub(REDACTED, params)
    return params
