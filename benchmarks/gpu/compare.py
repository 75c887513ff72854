"""tcdoctor's CUDA figures against the plain scripts', one line per figure (benchmarks/gpu_check.sh).

Reads a folder that holds what gpu_check.sh wrote: `A.json` (block_infer.py's report), `C.json`
(gpt2_train_amp.py with --modes default,reduce-overhead), `E.json` (cg_mutation.py under
reduce-overhead), `ref.jsonl` (ref_blocked.py: blocked_autorange per side, one line per fresh
process) and `by_hand.jsonl` (benchmarked_by_hand.py: the benchmark article's method, one line per
mode, each a fresh process). A missing file leaves its lines "not run".

Each line: the figure, tcdoctor's value, the script's, and a check (PASS / FAIL / INFO):
- the GPT-2 step's speedup per mode within ±10% of the by-hand one (issue 50's bound);
- the encoder's speedup interval holding the blocked_autorange scripts' figures, and no "under load";
- reduce-overhead's memory held at least default's (CUDA graphs' pool);
- cg_mutation's skip reason in PyTorch's words naming the mutated input, and its numerics compared
  with the input named, not called random.

Usage: python benchmarks/gpu/compare.py FOLDER   (exit 1 when a check fails)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

BOUND = 0.10  # the GPT-2 step's speedup: tcdoctor within ±10% of the by-hand one


def _load(folder: str, name: str) -> Any:
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    if name.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}×"


def _mib(b: float | None) -> str:
    return "not measured" if b is None else f"{b / 2**20:,.0f} MiB"


def _row(rows: list[dict], name: str) -> dict:
    return next((r for r in rows if r.get("name") == name), {})


def gpt2_lines(report: dict | None, by_hand: list[dict] | None) -> list[tuple[str, str, str, str]]:
    """Per mode: the step's speedup (checked within BOUND), step time, first call, memory."""
    if report is None or not by_hand:
        return [("gpt2 train step", "not run", "not run", "INFO")]
    hand = {h["mode"]: h for h in by_hand}
    eager = hand.get("eager", {}).get("train_ms_per_iter_median")
    rows = (report.get("strategies") or {}).get("modes") or []
    out = []
    for mode in ("default", "reduce-overhead"):
        r, h = _row(rows, mode), hand.get(mode, {})
        ours = r.get("speedup")
        theirs = eager / h["train_ms_per_iter_median"] if eager and h else None
        ok = ours is not None and theirs and abs(ours / theirs - 1) <= BOUND
        ci = r.get("speedup_ci") or [None, None]
        out.append(
            (
                f"gpt2 {mode}: speedup",
                f"{_x(ours)} (CI {_x(ci[0])}–{_x(ci[1])})",
                _x(theirs),
                ("PASS" if ok else "FAIL") + f" (±{BOUND:.0%})",
            )
        )
        ms = r.get("median_s")
        out.append(
            (
                f"gpt2 {mode}: ms/step",
                "n/a" if ms is None else f"{ms * 1e3:.2f} ms",
                f"{h.get('train_ms_per_iter_median', 'n/a')} ms",
                "INFO",
            )
        )
        out.append(
            (
                f"gpt2 {mode}: first call / its memory",
                f"{r.get('first_call_s') or 0:.1f} s / {_mib(r.get('first_call_peak_bytes'))}",
                f"{h.get('initial_step_s', 'n/a')} s / {h.get('initial_step_mib', 'n/a')} MiB",
                "INFO",
            )
        )
    default, ro = _row(rows, "default"), _row(rows, "reduce-overhead")
    held = (default.get("held_bytes"), ro.get("held_bytes"))
    ok = None not in held and held[1] >= held[0]
    out.append(
        (
            "gpt2 memory held: reduce-overhead ≥ default",
            f"{_mib(held[1])} vs {_mib(held[0])}",
            "the article: reduce-overhead 5,736 MiB vs default 3,277",
            "PASS" if ok else "FAIL",
        )
    )
    return out


def encoder_lines(report: dict | None, refs: list[dict] | None) -> list[tuple[str, str, str, str]]:
    """The encoder's speedup interval against blocked_autorange's processes; no load claimed."""
    if report is None:
        return [("encoder inference", "not run", "not run", "INFO")]
    rt = report.get("runtime") or {}
    lo, hi = (rt.get("speedup_ci") or [None, None])[:2]
    theirs = [r["speedup"] for r in refs or []]
    holds = bool(theirs) and lo is not None and all(lo <= s <= hi for s in theirs)
    load = (rt.get("load") or {}).get("text")
    reasons = " ".join((report.get("verdict") or {}).get("reasons") or [])
    loaded = bool(load) or "under load" in reasons or "OpenMP threads waited" in reasons
    return [
        (
            "encoder: speedup (interval holds the scripts')",
            f"{_x(rt.get('speedup'))} (CI {_x(lo)}–{_x(hi)})",
            ", ".join(_x(s) for s in theirs) or "not run",
            "PASS" if holds else "FAIL",
        ),
        (
            "encoder: not called under load",
            load or "no load said",
            "nothing else ran on the machine",
            "FAIL" if loaded else "PASS",
        ),
    ]


def cg_lines(report: dict | None) -> list[tuple[str, str, str, str]]:
    """cg_mutation: PyTorch's skip reason, and its numerics on the mutated input."""
    if report is None:
        return [("cg_mutation", "not run", "not run", "INFO")]
    g = (report.get("compile") or {}).get("cudagraphs") or {}
    reasons = "; ".join(r.get("reason", "") for r in g.get("reasons") or []) or "none read"
    num = report.get("numerics") or {}
    mutated = (num.get("mutates") or {}).get("inputs") or []
    random = bool((num.get("rng") or {}).get("stochastic"))
    return [
        (
            "cg_mutation: CUDA-graph skip reason",
            f"{g.get('skipped', '?')} of {g.get('graphs', '?')} skipped: {reasons}",
            "PyTorch skips: mutated inputs",
            "PASS" if "mutated inputs" in reasons else "FAIL",
        ),
        (
            "cg_mutation: numerics",
            f"passed={num.get('passed')}, changes in place: {mutated or 'nothing named'}, "
            f"random={random}",
            "draws no random numbers; changes args[1]",
            "PASS" if mutated == ["args[1]"] and not random and num.get("passed") else "FAIL",
        ),
    ]


def lines(folder: str) -> list[tuple[str, str, str, str]]:
    return (
        encoder_lines(_load(folder, "A.json"), _load(folder, "ref.jsonl"))
        + gpt2_lines(_load(folder, "C.json"), _load(folder, "by_hand.jsonl"))
        + cg_lines(_load(folder, "E.json"))
    )


def main() -> int:
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    rows = lines(folder)
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':{width}}  | tcdoctor | by hand | check")
    for name, ours, theirs, check in rows:
        print(f"{name:{width}}  | {ours} | {theirs} | {check}")
    return 1 if any(r[3].startswith("FAIL") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
