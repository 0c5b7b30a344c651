"""``python -m bench.report``: bench/report.md again from bench/results.json, no measuring."""

import json
from pathlib import Path

from . import write

here = Path(__file__).resolve().parent.parent
write(json.loads((here / "results.json").read_text()), here)
