"""A phone's client: what a reply's file message costs against JSON parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import targets
from ..targets import TARGETS
from .figures import mark, med, plt, spread


def phone_section(phone: dict[str, Any], out: Path) -> list[str]:
    """The picture on the phone by file message or by JSON parts; mcp --to's large files."""
    rows = phone["phone"]
    ms = {way: [r["ms"] for r in rows[way]] for way in ("file", "json")}
    ratio, goal = targets.phone_ratio(phone), TARGETS["phone"]
    names = {
        "file": "text `screenshot`: kind 15 unwrapped, blob fetched, x/ox checked, decrypted",
        "json": "JSON `screenshot`: numbered parts joined, sha256 checked, base64 decoded",
    }
    lines = [
        f"## {targets.PHONE}",
        "",
        f"One real daemon (Chromium) with `[files] blossom_servers` on the tests' Blossom server "
        f"and a loopback relay; the phone is nostr-tools in Node with WebCrypto "
        f"(bench/phone.mjs); the same page (`{phone['page']}`, "
        f"{rows['file'][0]['size'] / 1024:.0f} KB of PNG), the two ways interleaved, "
        f"{len(ms['file'])} rounds each. Bytes are the gift wraps the phone received, and the "
        "blob it fetched.",
        "",
        "| way | median ms | spread | × JSON parts | KB on the wire | messages |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for way in ("file", "json"):
        row = rows[way][0]
        messages = "kind 15 + kind 14" if way == "file" else f"{row['parts']} parts"
        lines.append(
            f"| {names[way]} | {med(ms[way]):.0f} | {spread(ms[way], ' ms')} | "
            f"{med(ms[way]) / med(ms['json']):.2f}× | {row['wire'] / 1024:.0f} | {messages} |"
        )
    text_ms = [r["text_ms"] for r in rows["file"]]
    lines += [
        "",
        f"The text reply (after the file message) reached the phone in {med(text_ms):.0f} ms "
        f"({spread(text_ms, ' ms')}). File message / JSON parts: {ratio:.2f}× "
        f"{mark(goal.met(ratio))} (target ≤ {goal.bound:.1f}×).",
        "",
        "### `mcp --to`'s large files: by a Blossom link, or in parts",
        "",
        "`mcp --to`'s own clients, `RemoteBackend` (our DM envelope) and `ContextVmBackend` "
        "(ContextVM), each as it runs (a file of 256 KB or more by a sealed Blossom link: "
        "uploaded by the daemon, fetched, x/ox-checked and decrypted by the client) and with "
        "`links=False` (the DM envelope's parts, CEP-22's parts). Each time includes taking "
        "the file in the browser; every link round fetched its blob once, every parts round "
        "none.",
        "",
        "| file | page | way | size KB | median ms | spread | × DM parts |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    charted: dict[str, list[float]] = {
        "phone: file message": ms["file"],
        "phone: JSON parts": ms["json"],
    }
    for name, ways in phone["mcp"].items():
        base = med([r["ms"] for r in ways["dm parts"]])
        for way, found in ways.items():
            times = [r["ms"] for r in found]
            charted[f"mcp {name}: {way}"] = times
            lines.append(
                f"| {name} | `{phone['mcp_pages'][name]}` | {way} | {found[0]['size'] / 1024:,.0f} "
                f"| {med(times):,.0f} | {spread(times, ' ms')} | {med(times) / base:.2f}× |"
            )
    phone_chart(charted, out / "phone.png")
    return [*lines, "", "![file message against parts](phone.png)", ""]


def phone_chart(times: dict[str, list[float]], path: Path) -> None:
    """Medians with their spreads, one bar per way."""
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(times) + 1))
    names = list(times)[::-1]
    medians = [med(times[n]) for n in names]
    low = [m - min(times[n]) for m, n in zip(medians, names, strict=True)]
    high = [max(times[n]) - m for m, n in zip(medians, names, strict=True)]
    ax.barh(names, medians, xerr=[low, high], capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("ms from the request to the file in hand (log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
