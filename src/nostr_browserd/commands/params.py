"""Params shared by many tools, so every tool names things the same way.

A target is ``ref`` (``"@e5"``, from a snapshot) or ``selector`` (CSS); text input is
``value``; addresses are ``url``; tabs are ``tab`` (``"t2"``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from .registry import Params

REF_HELP = "element ref from a snapshot, e.g. @e5 or @f1e3"
SELECTOR_HELP = "CSS selector matching exactly one element (pierces open shadow roots)"


class OptionalTarget(Params):
    """An element by ref or selector, or none (the tool then acts on the page)."""

    ref: str | None = Field(None, description=REF_HELP)
    selector: str | None = Field(None, description=SELECTOR_HELP)

    @model_validator(mode="after")
    def _at_most_one(self) -> OptionalTarget:
        if self.ref is not None and self.selector is not None:
            raise ValueError("give ref or selector, not both")
        return self

    @property
    def has_target(self) -> bool:
        """Whether an element was named."""
        return self.ref is not None or self.selector is not None

    def target(self) -> dict[str, Any]:
        """The keyword arguments for ``Session.locate``."""
        return {"ref": self.ref, "selector": self.selector}


class Target(OptionalTarget):
    """Exactly one element: ``ref`` or ``selector``."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Target:
        if not self.has_target:
            raise ValueError("give a ref (e.g. @e5) or a selector")
        return self


class Url(Params):
    """An address, a bare host or a search phrase, resolved like an address bar."""

    url: str = Field(min_length=1, description="address, bare host or search phrase")


class TabId(Params):
    """A tab by id; the active tab when omitted."""

    tab: str | None = Field(None, pattern=r"^t\d+$", description="tab id, e.g. t2")
