"""The text grammar people type: ``click @e2``, ``fill @e3 "hello"``, ``snapshot -i``.

It is table-driven: each tool's ``args`` (bare words in order; ``target`` is a ref or
a selector; ``*name`` takes the rest of the line) and ``flags`` (``-i`` → interactive)
come from its registry declaration, ``--name value`` works for every param, and two-word
commands (``get text``, ``tab new``) are the tool names with a space for the underscore.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..browser.refs import looks_like_ref
from ..errors import BrowserdError, ErrorCode
from .params import Target
from .registry import Registry, Tool

TAB = re.compile(r"^t\d+$")
# Words that pick a tool by what follows them: (word, test on the rest, tool).
SHORTHANDS: tuple[tuple[str, Any, str], ...] = (
    ("tab", lambda rest: not rest, "tab_list"),
    ("tab", lambda rest: bool(TAB.match(rest[0])), "tab_switch"),
    ("wait", lambda rest: bool(rest) and not rest[0].isdigit(), "wait_for"),
    ("goto", lambda rest: True, "open"),
    ("navigate", lambda rest: True, "open"),
)
# agent-browser's spellings of a tool, as leading words: they pick it and are consumed.
SPELLINGS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("screenshot", "--annotate"), "screenshot_annotated"),
)


@dataclass(frozen=True)
class Word:
    """One word of a text command, with where it sits in the line."""

    text: str
    start: int
    end: int
    quoted: bool


WORD = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|(\S+)')


def split_words(line: str) -> list[Word]:
    """Words separated by spaces; "double" or 'single' quotes keep spaces inside one."""
    if line.count('"') % 2 and "'" not in line:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "A quote is not closed.")
    words = []
    for match in WORD.finditer(line):
        double, single, bare = match.groups()
        if double is not None:
            text = re.sub(r"\\(.)", r"\1", double)
        else:
            text = single if single is not None else bare
        words.append(Word(text, match.start(), match.end(), bare is None))
    return words


def parse_text(line: str, registry: Registry) -> dict[str, Any]:
    """``fill @e3 "hello world"`` → ``{"tool": "fill", "params": {...}}``."""
    words = split_words(line)
    if not words:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "Empty command: send 'help' for the list.")
    tool, rest = pick_tool(words, registry)
    return {"tool": tool.name, "params": bind(tool, rest, line)}


MAX_NAME_WORDS = 4  # storage local get key → storage_local_get_key


def pick_tool(words: list[Word], registry: Registry) -> tuple[Tool[Any], list[Word]]:
    """The tool a line names (``get text`` → get_text) and the words left for its params.

    The longest run of leading words that names a tool wins, so ``wait for text hi`` is
    wait_for_text, not wait_for with a selector ``text``.
    """
    head = words[0].text.lower()
    for spelling, name in SPELLINGS:
        leading = tuple(w.text.lower() for w in words[: len(spelling)] if not w.quoted)
        if leading == spelling and name in registry:
            return registry.get(name), words[len(spelling) :]
    for n in range(min(MAX_NAME_WORDS, len(words)), 1, -1):
        if any(w.quoted for w in words[:n]):
            continue
        name = "_".join(w.text.lower() for w in words[:n])
        if name in registry:
            return registry.get(name), words[n:]
    for word, test, name in SHORTHANDS:
        if head == word and test([w.text for w in words[1:]]) and name in registry:
            return registry.get(name), words[1:]
    return registry.get(head), words[1:]


def bind(tool: Tool[Any], words: list[Word], line: str) -> dict[str, Any]:
    """Fill params from bare words (in ``tool.args`` order), ``--name value`` and ``-x``.

    A ``*`` param takes the rest of the line as typed, so ``eval a = 'b'`` keeps its quotes.
    """
    fields = tool.params.model_fields
    params: dict[str, Any] = {}
    bare: list[Word] = []
    i = 0
    while i < len(words):
        word = words[i]
        key = None if word.quoted else flag_name(tool, word.text)
        if key is None:
            bare.append(word)
        elif "=" in word.text:
            params[key] = word.text.split("=", 1)[1]
        elif fields[key].annotation in (bool, bool | None):
            params[key] = not word.text.startswith("--no-")
        elif i + 1 < len(words):
            i += 1
            params[key] = words[i].text
        else:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS, f"{word.text} needs a value. {usage(tool)}"
            )
        i += 1
    for spec in tool.args:
        if not bare:
            break
        if spec.startswith("*"):
            whole = bare[0].text if len(bare) == 1 else line[bare[0].start : bare[-1].end]
            params[spec[1:]] = whole
            bare = []
        elif spec == "target":
            word = bare.pop(0)
            params["ref" if looks_like_ref(word.text) else "selector"] = word.text
        else:
            params[spec] = bare.pop(0).text
    if bare:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"Too many words. {usage(tool)}")
    return params


def flag_name(tool: Tool[Any], word: str) -> str | None:
    """The param a ``--long``/``-s`` word names, or None when it is a bare word."""
    fields = tool.params.model_fields
    if word.startswith("--") and len(word) > 2:
        name = word[2:].split("=", 1)[0].replace("-", "_")
        name = tool.flags.get(name, name)  # a long alias: --origin for origins
        name = name[3:] if name.startswith("no_") and name[3:] in fields else name
        return name if name in fields else None
    if len(word) == 2 and word[0] == "-":
        return tool.flags.get(word[1])
    return None


def usage(tool: Tool[Any]) -> str:
    """``usage: fill <@ref|selector> <value…> [--secret]``, from the tool's declaration."""
    fields = tool.params.model_fields
    parts = ["usage:", tool.name.replace("_", " ")]
    named = set()
    for spec in tool.args:
        name = spec.lstrip("*")
        if name == "target":
            named |= {"ref", "selector"}
            text = "<@ref|selector>"
            parts.append(text if issubclass(tool.params, Target) else f"[{text}]")
            continue
        named.add(name)
        text = f"<{name}{'…' if spec.startswith('*') else ''}>"
        parts.append(text if fields[name].is_required() else f"[{text}]")
    shorts = {v: k for k, v in tool.flags.items()}
    for name, field in fields.items():
        if name in named:
            continue
        short = shorts.get(name, name.replace("_", "-"))
        flag = f"-{short}" if len(short) == 1 else f"--{short}"
        parts.append(
            f"[{flag}]" if field.annotation in (bool, bool | None) else f"[{flag} <{name}>]"
        )
    return " ".join(parts)
