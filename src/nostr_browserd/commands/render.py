"""Text replies for people on a phone: the answer first, then where the tab is, then any dialog.

Nested results (console entries, cookies, requests, a screenshot's legend) come one item
a line as ``key: value`` pairs, never as Python reprs; a binary payload is named by its
type and size (``<png, 18 KB>``), never printed; the answer is cut to the result cap.
"""

from __future__ import annotations

from typing import Any

from ..browser.config import BrowserConfig

BINARY_KEYS = frozenset({"base64"})
STATE_KEYS = ("url", "title", "tab", "dialog", "alert", "same_place")
VERBATIM_KEYS = ("snapshot", "text", "html", "usage")
DEFAULT_LIMIT: int = BrowserConfig.model_fields["result_cap"].default
EMPTY: tuple[object, ...] = (None, "", [], {})


def render_text(response: dict[str, Any], limit: int = DEFAULT_LIMIT) -> str:
    """A reply for a person; the answer part is at most ``limit`` characters."""
    if not response.get("success"):
        error = response.get("error", {})
        return f"✗ {error.get('code')}: {error.get('message')}"
    data = response.get("data")
    if not isinstance(data, dict):
        return str(data)
    lines = [*bounded(answer_lines(data), limit), *state_lines(data)]
    return "\n".join(lines) if lines else "✓"


def answer_lines(data: dict[str, Any]) -> list[str]:
    """What the tool answered, before the note and the tab's state."""
    lines: list[str] = []
    if "tools" in data:
        lines += [
            f"{t['name']}{' (gated)' if t['gated'] else ''}: {t['description']}"
            for t in data["tools"]
        ]
    lines += [data[key] for key in VERBATIM_KEYS if isinstance(data.get(key), str)]
    hidden = {"tools", *VERBATIM_KEYS, "tabs", "note", *STATE_KEYS, *BINARY_KEYS}
    if isinstance(data.get("base64"), str):
        lines.append(binary_line(data))
        hidden |= {"mime", "bytes"}
    if isinstance(data.get("tabs"), list):
        lines += [
            f"{'▶' if t['active'] else ' '} {t['tab']}  {t['title'] or ''}  {t['url']}"
            for t in data["tabs"]
        ]
    for key, value in data.items():
        if key not in hidden and value not in EMPTY:
            lines += field_lines(key, value, 0)
    return lines


def state_lines(data: dict[str, Any]) -> list[str]:
    """The note, the tab (id, title, address) unless the previous reply said the same, an
    alert that was accepted and a dialog."""
    lines = []
    if data.get("note"):
        lines.append(f"⚠ {data['note']}")
    if (data.get("tab") or data.get("url")) and not data.get("same_place"):
        lines.append(
            f"[{data.get('tab')}] {data.get('title') or ''} {data.get('url') or ''}".strip()
        )
    if data.get("alert"):
        lines.append(f"alert: {data['alert']['message']!r} (accepted)")
    if data.get("dialog"):
        d = data["dialog"]
        lines.append(
            f"⚠ {d['type']} dialog open: {d['message']!r}: reply dialog accept | dialog dismiss"
        )
    return lines


def bounded(lines: list[str], limit: int) -> list[str]:
    """The lines, cut at a line break to fit ``limit`` characters, saying what was cut."""
    text = "\n".join(lines)
    if len(text) <= limit:
        return lines
    end = text.rfind("\n", 0, limit)
    kept = text[: end if end > 0 else limit]
    return [kept, f"… [cut {len(text) - len(kept):,} characters: ask for less, or in JSON]"]


def binary_line(data: dict[str, Any]) -> str:
    """``<png, 18 KB: ask in JSON for the data>`` for a result that carries base64."""
    encoded: str = data["base64"]
    size = len(encoded) * 3 // 4 - (len(encoded) - len(encoded.rstrip("=")))
    mime = data.get("mime")
    kind = mime.split("/")[-1] if isinstance(mime, str) else data.get("name") or "data"
    return f"<{kind}, {human_size(size)}: ask in JSON for the data>"


def human_size(size: int) -> str:
    """Bytes as a person reads them: 512 bytes, 18 KB, 2.4 MB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def field_lines(key: str, value: Any, depth: int) -> list[str]:
    """``key: value`` on one line when the value is flat, else ``key:`` and a block."""
    pad = "  " * depth
    if is_flat(value):
        return [f"{pad}{key}: {inline(value)}"]
    if isinstance(value, dict) and isinstance(value.get("properties"), dict):
        return [f"{pad}{key}:", *schema_lines(value, depth + 1)]
    return [f"{pad}{key}:", *block(value, depth + 1)]


def block(value: dict[str, Any] | list[Any], depth: int) -> list[str]:
    """A dict's fields, or a list one item a line (``- key: value, key: value``)."""
    if isinstance(value, dict):
        return [
            line for k, v in value.items() if v not in EMPTY for line in field_lines(k, v, depth)
        ]
    pad = "  " * depth
    lines = []
    for item in value:
        if isinstance(item, dict):
            flat = [f"{k}: {inline(v)}" for k, v in item.items() if is_flat(v) and v not in EMPTY]
            lines.append(f"{pad}- {', '.join(flat)}".rstrip())
            nested = {k: v for k, v in item.items() if not is_flat(v) and v not in EMPTY}
            lines += block(nested, depth + 1)
        elif is_flat(item):
            lines.append(f"{pad}- {inline(item)}")
        else:
            lines += [f"{pad}-", *block(item, depth + 1)]
    return lines


def is_flat(value: Any) -> bool:
    """A scalar, or a list of scalars: fits on the line after its key."""
    if isinstance(value, list):
        return all(not isinstance(v, dict | list) for v in value)
    return not isinstance(value, dict)


def inline(value: Any) -> str:
    """A scalar as a person writes it (yes/no, - for nothing), a list comma-separated."""
    if isinstance(value, list):
        return ", ".join(inline(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def schema_lines(schema: dict[str, Any], depth: int) -> list[str]:
    """A params JSON schema as one line per param: ``name (type, required): what it is``."""
    pad = "  " * depth
    required = set(schema.get("required", []))
    lines = []
    for name, prop in schema["properties"].items():
        kinds = [prop, *prop.get("anyOf", [])]
        types = [
            "|".join(map(str, k["enum"])) if "enum" in k else k["type"]
            for k in kinds
            if ("enum" in k or "type" in k) and k.get("type") != "null"
        ]
        shape = ", ".join([*dict.fromkeys(types), *(["required"] if name in required else [])])
        about = prop.get("description", "")
        lines.append(f"{pad}{name}{f' ({shape})' if shape else ''}{f': {about}' if about else ''}")
    return lines
