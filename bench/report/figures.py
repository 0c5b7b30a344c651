"""What every section shares: medians, spreads, verdict marks, and pyplot without a display."""

from __future__ import annotations

import statistics
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["mark", "med", "pages_of", "plt", "spread"]


def med(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float], unit: str = "", digits: int = 0) -> str:
    return f"{min(values):,.{digits}f}–{max(values):,.{digits}f}{unit}"


def mark(ok: bool) -> str:
    return "✅" if ok else "❌"


def pages_of(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["page"] for r in rows))
