"""The one error type that crosses every layer and becomes ``{"code", "message"}`` at the edge."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Stable machine-readable codes; messages tell the reader what to do next."""

    ELEMENT_NOT_FOUND = "ELEMENT_NOT_FOUND"
    AMBIGUOUS = "AMBIGUOUS"
    STALE_REF = "STALE_REF"
    TIMEOUT = "TIMEOUT"
    INVALID_PARAMS = "INVALID_PARAMS"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    NOT_LOGGED_IN = "NOT_LOGGED_IN"
    READ_ONLY_IDENTITY = "READ_ONLY_IDENTITY"
    REFUSED = "REFUSED"
    FORBIDDEN = "FORBIDDEN"
    DENIED = "DENIED"
    BROWSER_CRASHED = "BROWSER_CRASHED"
    NO_DIALOG = "NO_DIALOG"
    NAVIGATION_FAILED = "NAVIGATION_FAILED"
    SIGNER_ERROR = "SIGNER_ERROR"
    TOO_LARGE = "TOO_LARGE"
    UNAVAILABLE = "UNAVAILABLE"
    INTERRUPTED = "INTERRUPTED"
    BUSY = "BUSY"
    INTERNAL = "INTERNAL"


class BrowserdError(Exception):
    """An expected failure with a code a caller can act on."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """The wire form: ``{"code": ..., "message": ...}``."""
        return {"code": self.code.value, "message": self.message}


def said(exc: BaseException) -> str:
    """What ``exc`` says to a person: a BrowserdError's own message, else its text, or its
    kind when it has none (``TimeoutError()`` says nothing)."""
    return exc.message if isinstance(exc, BrowserdError) else str(exc) or type(exc).__name__
