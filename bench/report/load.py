"""Many controllers at once: the load against the minimal responder, workers, the profile."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .. import targets
from ..targets import LOAD_BASE, TARGETS
from .figures import mark, med, plt, spread


def load_section(rows: list[dict[str, Any]], out: Path) -> list[str]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["system"], r["controllers"])].append(r)
    levels = sorted({n for _, n in groups})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    lines = [
        f"## {targets.LOAD}",
        "",
        "The relay, the load generator (pre-signed wraps, published on a connection apart from",
        "the one its replies arrive on, every frame acknowledged at once, replies matched",
        "without decrypting) and the system",
        "under test each run in their own process; each controller sends its next `get_url`",
        "when its previous reply arrives. Medians over the repetitions (min–max); the echo",
        "publishes replies built in advance (no crypto: the generator's and the relay's own",
        "floor), the minimal responder is nostr-sdk's Rust crypto and our relay pool with no",
        "browser. CPU seconds per 1,000 commands are read from /proc around the generator's",
        "timed window.",
        "",
        "| controllers | system | commands/s | × minimal | p50 ms | × minimal | p95 ms | "
        "CPU s / 1,000: system | browser | relay | generator | replies checked |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    verdicts = []
    ratios = targets.load_ratios(rows)
    for n in levels:
        base = groups[(LOAD_BASE, n)]
        base_tp = med([r["throughput"] for r in base])
        base_p50 = med([r["p50_ms"] for r in base])
        for system in systems:
            runs = groups[(system, n)]
            tp = [r["throughput"] for r in runs]
            p50 = [r["p50_ms"] for r in runs]
            p95 = [r["p95_ms"] for r in runs]
            cpu = defaultdict(list)
            for r in runs:
                for side, value in r["cpu_per_1000"].items():
                    cpu[side].append(value)
            own = cpu.get("daemon") or cpu.get("responder") or cpu.get("echo") or [0]
            note_tp = note_p50 = ""
            if system == "daemon":
                ok_tp = TARGETS["throughput"].met(ratios[n]["throughput"])
                ok_p50 = TARGETS["p50"].met(ratios[n]["p50"])
                verdicts += [ok_tp, ok_p50]
                note_tp, note_p50 = " " + mark(ok_tp), " " + mark(ok_p50)
            checked = sum(r["check"]["ok"] for r in runs)
            failed = sum(r["check"]["failed"] for r in runs)
            lines.append(
                f"| {n} | {system} | {med(tp):.1f} ({spread(tp, digits=1)}) | "
                f"{med(tp) / base_tp:.2f}×{note_tp} | {med(p50):.1f} ({spread(p50, digits=1)}) | "
                f"{med(p50) / base_p50:.2f}×{note_p50} | {med(p95):.1f} | {med(own):.2f} | "
                f"{med(cpu.get('browser', [0])):.2f} | {med(cpu['relay']):.2f} | "
                f"{med(cpu['generator']):.2f} | {checked} ok, {failed} failed |"
            )
    lines += [
        "",
        f"Targets (daemon against the minimal responder at the same load): throughput ≥ "
        f"{TARGETS['throughput'].bound}×, p50 ≤ {TARGETS['p50'].bound}×: "
        f"{sum(verdicts)} of {len(verdicts)} met.",
        "",
        *load_floor_and_cpu(ratios),
        "",
        "![throughput](throughput.png)",
        "",
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for system in systems:
        for ax, key in ((left, "throughput"), (right, "p50_ms")):
            values = [[r[key] for r in groups[(system, n)]] for n in levels]
            ys = [med(v) for v in values]
            err = [
                [y - min(v) for y, v in zip(ys, values, strict=True)],
                [max(v) - y for y, v in zip(ys, values, strict=True)],
            ]
            ax.errorbar(levels, ys, yerr=err, marker="o", capsize=3, label=system)
    left.set_ylabel("commands/s")
    right.set_ylabel("p50 latency, ms")
    for ax in (left, right):
        ax.set_xlabel("controllers at once")
        ax.set_xscale("log")
        ax.set_xticks(levels, [str(n) for n in levels])
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)
    return lines


def load_floor_and_cpu(ratios: dict[int, dict[str, float]]) -> list[str]:
    """The daemon's CPU per command over the minimal responder's and the generator's floor
    (the echo's rate over the daemon's), per level."""
    cpu, floor = TARGETS["cpu"], TARGETS["generator"]
    lines = []
    for n, level in ratios.items():
        line = (
            f"- {n} controller(s): daemon CPU per command {level['cpu']:.2f}× the minimal "
            f"responder's {mark(cpu.met(level['cpu']))} (target ≤ {cpu.bound}×)"
        )
        if "generator" in level:
            line += (
                f"; the generator alone (against the echo) reaches {level['generator']:.1f}× "
                f"the daemon's rate {mark(floor.met(level['generator']))} "
                f"(target ≥ {floor.bound}×)"
            )
        lines.append(line + ".")
    return lines


def round_trip_chart(load_rows: list[dict[str, Any]], out: Path) -> list[str]:
    """The round trip against the minimal responder: one controller, out of process."""
    one = [r for r in load_rows if r["controllers"] == 1]
    systems = list(dict.fromkeys(r["system"] for r in one))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ys = [med([r["p50_ms"] for r in one if r["system"] == s]) for s in systems]
    ax.bar(systems, ys, color=["tab:gray", "tab:blue"][: len(systems)])
    ax.set_ylabel("p50 round trip, ms (one controller)")
    fig.tight_layout()
    fig.savefig(out / "round_trip.png", dpi=110)
    plt.close(fig)
    return ["![round trip](round_trip.png)", ""]


def scale_section(scale: dict[str, Any], out: Path) -> list[str]:
    """Commands/s with 1, 2, 3 workers (× the 1-worker run), per-command database cost, and
    contexts per GB of a worker's Chromium."""
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in scale["levels"]:
        groups[r["workers"]].append(r)
    levels = sorted(groups)
    base = med([r["throughput"] for r in groups[levels[0]]])
    lines = [
        f"## {targets.SCALE}",
        "",
        f"{scale['controllers']} controllers, each a closed loop of {scale['per_controller']}",
        "`get_url` commands sent through two relays (LocalRelays, each its own process) to N",
        "`nostr-browserd run` workers with one identity file and one database (the tests'",
        "harness, tests/fixtures/cluster.py). Every worker receives every command through every",
        "relay and the claim decides who runs it. The database cost is `pg_stat_statements`",
        "over the timed window (time spent in the server) divided by the commands answered,",
        "the workers' background work included; CPU seconds per 1,000 commands are read from",
        "/proc. Each round times every level once, the levels in turn (reversed every other",
        "round), each on a fresh database; medians (min–max) over the rounds, and the targets'",
        "CPU ratio is the median over the rounds of each round's ratio to its 1 worker.",
        "",
        "| workers | commands/s | × 1 worker | p50 ms | statements / command | database ms / "
        "command | CPU s / 1,000: workers | PostgreSQL | relays | commands run per worker | "
        "replies checked |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for n in levels:
        runs = groups[n]
        tp = [r["throughput"] for r in runs]
        cpu = {k: med([r["cpu_per_1000"][k] for r in runs]) for k in runs[0]["cpu_per_1000"]}
        checked = sum(r["check"]["ok"] for r in runs)
        bad = sum(r["check"]["failed"] + r["check"]["duplicates"] for r in runs)
        served = " / ".join(str(x) for x in runs[-1]["served"])
        lines.append(
            f"| {n} | {med(tp):.1f} ({spread(tp, digits=1)}) | {med(tp) / base:.2f}× | "
            f"{med([r['p50_ms'] for r in runs]):.0f} | "
            f"{med([r['database']['statements'] for r in runs]):.1f} | "
            f"{med([r['database']['ms'] for r in runs]):.2f} | {cpu['workers']:.2f} | "
            f"{cpu['postgres']:.2f} | {cpu['relays']:.2f} | {served} | "
            f"{checked} ok, {bad} failed or twice |"
        )
    lines += ["", "Statements per command (the last run of each level, most frequent first):", ""]
    for n in levels:
        top = groups[n][-1]["database"]["top"]
        cells = "; ".join(f"`{t['query'][:60]}` {t['per_command']:.2f}" for t in top[:4])
        lines.append(f"- {n} worker(s): {cells}")
    lines += [
        "",
        "Contexts per GB: PSS of one worker's Chromium (MB) with K controllers, each holding",
        "one page in its own context (opened over DMs); MB per context is the least-squares",
        "slope.",
        "",
        "| page | "
        + " | ".join(f"K = {k}" for k in scale["contexts"][0]["pss_mb"])
        + " | MB per context | contexts per GB |",
        "| --- |" + " ---: |" * (len(scale["contexts"][0]["pss_mb"]) + 2),
    ]
    for row in scale["contexts"]:
        cells = " | ".join(f"{mb:,.0f}" for mb in row["pss_mb"].values())
        lines.append(
            f"| {row['page']} | {cells} | {row['mb_per_context']:.1f} | "
            f"{row['contexts_per_gb']:.0f} |"
        )
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.bar([str(n) for n in levels], [med([r["throughput"] for r in groups[n]]) for n in levels])
    left.set_xlabel("workers")
    left.set_ylabel("commands/s")
    right.bar(
        [str(n) for n in levels],
        [med([r["database"]["statements"] for r in groups[n]]) for n in levels],
    )
    right.set_xlabel("workers")
    right.set_ylabel("database statements per command")
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)
    plt.close(fig)
    return [*lines, "", "![scale-out](scale.png)", ""]


def profile_section(profile: dict[str, Any]) -> list[str]:
    total = profile["total_s"]
    per = 1000 / profile["commands"] if profile.get("commands") else None
    lines = [
        f"## {targets.PROFILE}",
        "",
        f"cProfile switched on in the daemon for the generator's timed window only "
        f"({profile.get('commands', 0):,} `get_url` commands): own time by kind of work, of "
        f"{total:.1f} s busy in the daemon's event loop (cProfile slows Python code, not the "
        "C and Rust it calls; waiting in epoll is not counted).",
        "",
        "| kind of work | seconds | per 1,000 commands | share |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind, seconds in profile["kinds"].items():
        if kind.startswith("idle"):
            continue
        scaled = f"{seconds * per:.2f}" if per else "–"
        lines.append(f"| {kind} | {seconds:.2f} | {scaled} | {seconds / total:.0%} |")
    if profile.get("secp256k1") and profile.get("commands"):
        calls = ", ".join(
            f"`{name}` {n / profile['commands']:.1f}" for name, n in profile["secp256k1"].items()
        )
        lines += ["", f"libsecp256k1 calls per command (request and reply): {calls}."]
    lines += ["", "| function | own s | cumulative s | calls |", "| --- | ---: | ---: | ---: |"]
    for f in profile["top"]:
        lines.append(
            f"| `{f['function']}` | {f['own_s']:.2f} | {f['cumulative_s']:.2f} | {f['calls']:,} |"
        )
    return [*lines, ""]
