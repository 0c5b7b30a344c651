"""The MCP SDK's server modules, imported without first running the SDK's two front doors.

Python runs a package's ``__init__`` before any module under it.  ``mcp/__init__.py`` imports
the SDK's client, and through it the ``MCPServer`` framework, its resources and the HTTP
stack; ``mcp/server/__init__.py`` imports ``MCPServer`` too.  A low-level stdio server
(``mcp.server``) uses none of them, and ``mcp --local``'s first answer waited for them: about
a fifth of the SDK's import, 0.12 s of CPU with the GIL held.

``server_side`` imports a module with those two packages entered but their ``__init__`` put
off.  Each runs in full, as the SDK wrote it, the first time the process asks it for a name
it does not have yet (``from mcp import ClientSession``): the rest of the process sees the
SDK it expects, only later.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

FRONTS = ("mcp", "mcp.server")
_running = threading.RLock()  # one thread runs the fronts (one may need the other)


def server_side(module: str, package: str | None = None) -> ModuleType:
    """``module`` (relative to ``package``, as ``importlib.import_module`` takes it), imported
    with the SDK's fronts not run yet (those not imported already)."""
    for name in FRONTS:
        if name not in sys.modules:
            _enter(name)
    return importlib.import_module(module, package)


def _enter(name: str) -> None:
    """``name``'s package in ``sys.modules``, its ``__init__`` to run on the first name missed."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, name
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)

    def front(attribute: str) -> Any:
        with _running:
            if vars(package).get("__getattr__") is front:
                del vars(package)["__getattr__"]
                loader.exec_module(package)
        return getattr(package, attribute)

    vars(package)["__getattr__"] = front  # what a module misses, it asks this (PEP 562)
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, package)
