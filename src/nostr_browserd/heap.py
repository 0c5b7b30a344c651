"""The cyclic garbage collector, kept from walking objects that cannot be garbage yet.

CPython's collector runs a pass every 700 allocations and, now and then, a pass over every
object it tracks.  Building tens of thousands of objects that all stay alive (a snapshot's
tree) sets off pass after pass that finds nothing, each over a heap that the burst itself
keeps growing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No collection while the block builds; what it leaves behind is collected afterwards.

    On Python's full index (56,000 lines of ai snapshot), the passes during the parse and
    print took 200 ms of the 400 ms a snapshot cost our process; paused, one pass frees the
    tree later, in about 50 ms.  Left paused if the caller had paused it already.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
