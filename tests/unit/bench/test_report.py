"""bench/report.md from results alone: each part measured gets its section and its charts."""

import json
import re
from pathlib import Path

from bench import report, targets

RESULTS = json.loads((Path(report.__file__).parent.parent / "results.json").read_text())
HEADINGS = [
    targets.SNAPSHOTS,
    targets.NAVIGATION,
    targets.COLD,
    targets.LOAD,
    targets.SCALE,
    targets.REMOTE,
    targets.JOB,
    targets.PHONE,
    targets.PROFILE,
]


def written(results: dict, out: Path) -> str:
    report.write(results, out)
    return (out / "report.md").read_text()


def test_every_part_has_its_section_in_order_and_every_chart_is_drawn(tmp_path: Path) -> None:
    text = written(RESULTS, tmp_path)
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert [h for h in headings if h in HEADINGS] == HEADINGS
    charts = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert charts and all((tmp_path / chart).stat().st_size > 0 for chart in charts)


def test_a_part_not_measured_has_no_section(tmp_path: Path) -> None:
    text = written({k: v for k, v in RESULTS.items() if k != "profile"}, tmp_path)
    assert f"## {targets.PROFILE}" not in text
    assert f"## {targets.PHONE}" in text
