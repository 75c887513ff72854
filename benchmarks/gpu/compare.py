"""tcdoctor's CUDA figures against the plain scripts', one line per figure (benchmarks/gpu_check.sh).

Reads a folder that holds what gpu_check.sh wrote: `A.json` (block_infer.py's report), `C.json`
(gpt2_train_amp.py, with --modes default,reduce-overhead or the default alone), `E.json`
(cg_mutation.py under reduce-overhead), `ref.jsonl` (ref_blocked.py on the encoder:
blocked_autorange per side, one line per fresh process), `ref_gpt2.jsonl` (ref_blocked.py on the
GPT-2 step, one line per fresh process, its `mode`), `by_hand.jsonl` (benchmarked_by_hand.py: the
benchmark article's method, one line per mode, each a fresh process: the runs before issue 56) and
`P.json` (process_state.py on the GPT-2 step). A missing file leaves its lines "not run".

Each line: the figure, tcdoctor's value, the scripts', and a check (PASS / FAIL / INFO):
- the GPT-2 step's speedup per mode within ±10% of the scripts' (issue 50's bound), judged
  against their own spread: inside the range of the scripts' figures widened by 10% either way
  (two ref_blocked processes a mode, each pairing eager and compiled in one process; a by-hand
  pair of processes, eager in one and the mode in another, where there is one);
- the encoder's speedup interval holding the blocked_autorange scripts' figures, and no "under load";
- reduce-overhead's memory held at least default's (CUDA graphs' pool);
- cg_mutation's skip reason in PyTorch's words naming the mutated input, and its numerics compared
  with the input named, not called random;
- which processes the GPT-2 headline left out, and what process_state.py found moved (INFO).

Usage: python benchmarks/gpu/compare.py FOLDER   (exit 1 when a check fails)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

BOUND = 0.10  # the GPT-2 step's speedup: tcdoctor within ±10% of the scripts' figures
MODES = ("default", "reduce-overhead")


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


def gpt2_scripts(by_hand: list[dict] | None, refs: list[dict] | None) -> dict[str, list]:
    """Per mode, each script's speedup: (what, speedup) for every ref_blocked process of the mode,
    and for every by-hand process of the mode over the by-hand eager process beside it."""
    hand: dict[str, list[dict]] = {}
    for h in by_hand or []:
        hand.setdefault(h["mode"], []).append(h)
    eagers = [h["train_ms_per_iter_median"] for h in hand.get("eager", [])]
    out: dict[str, list] = {}
    for mode in MODES:
        xs = [("ref_blocked", r["speedup"]) for r in refs or [] if r.get("mode") == mode]
        for i, h in enumerate(hand.get(mode, [])):
            if eagers:
                eager = eagers[min(i, len(eagers) - 1)]
                xs.append(("by hand", eager / h["train_ms_per_iter_median"]))
        out[mode] = xs
    return out


def within_spread(ours: float | None, theirs: list[float]) -> bool:
    """tcdoctor's figure inside the scripts' range widened by BOUND either way."""
    return (
        ours is not None
        and bool(theirs)
        and min(theirs) / (1 + BOUND) <= ours <= max(theirs) * (1 + BOUND)
    )


def gpt2_lines(
    report: dict | None, by_hand: list[dict] | None, refs: list[dict] | None = None
) -> list[tuple[str, str, str, str]]:
    """Per mode: the step's speedup (checked against the scripts' spread), step time, first call;
    memory held; the processes the headline left out."""
    scripts = gpt2_scripts(by_hand, refs)
    if report is None or not any(scripts.values()):
        return [("gpt2 train step", "not run", "not run", "INFO")]
    rows = (report.get("strategies") or {}).get("modes") or []
    hand = {h["mode"]: h for h in by_hand or []}
    out = []
    for mode in MODES:
        r, h, xs = _row(rows, mode), hand.get(mode, {}), scripts[mode]
        if mode != "default" and not r and not xs:
            continue  # --quick: the default mode alone
        ours = r.get("speedup") if r else (report.get("runtime") or {}).get("speedup")
        theirs = [x for _, x in xs]
        spread = f" (spread {_x(min(theirs))}–{_x(max(theirs))})" if len(theirs) > 1 else ""
        ci = r.get("speedup_ci") or (report.get("runtime") or {}).get("speedup_ci") or [None] * 2
        out.append(
            (
                f"gpt2 {mode}: speedup",
                f"{_x(ours)} (CI {_x(ci[0])}–{_x(ci[1])})",
                (", ".join(f"{_x(x)} ({what})" for what, x in xs) or "not run") + spread,
                "INFO (no script ran)"
                if not theirs
                else ("PASS" if within_spread(ours, theirs) else "FAIL") + f" (±{BOUND:.0%})",
            )
        )
        out += _gpt2_info(mode, r, h, [x for x in refs or [] if x.get("mode") == mode])
    default, ro = _row(rows, "default"), _row(rows, "reduce-overhead")
    if ro:
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
    left = [
        f"{p['process']} ({p['excluded']})"
        for p in (report.get("runtime") or {}).get("processes") or []
        if p.get("excluded")
    ]
    out.append(("gpt2: processes left out of the headline", "; ".join(left) or "none", "", "INFO"))
    return out


def _gpt2_info(mode: str, r: dict, h: dict, refs: list[dict]) -> list[tuple[str, str, str, str]]:
    """A mode's ms per step and first call, tcdoctor's beside the scripts' (INFO)."""
    ms = r.get("median_s")
    theirs = [f"{x['compiled_median_s'] * 1e3:.2f} ms (ref_blocked)" for x in refs]
    if h:
        theirs.append(f"{h.get('train_ms_per_iter_median', 'n/a')} ms (by hand)")
    out = [
        (
            f"gpt2 {mode}: ms/step",
            "n/a" if ms is None else f"{ms * 1e3:.2f} ms",
            ", ".join(theirs) or "not run",
            "INFO",
        )
    ]
    if h:
        out.append(
            (
                f"gpt2 {mode}: first call / its memory",
                f"{r.get('first_call_s') or 0:.1f} s / {_mib(r.get('first_call_peak_bytes'))}",
                f"{h.get('initial_step_s', 'n/a')} s / {h.get('initial_step_mib', 'n/a')} MiB",
                "INFO",
            )
        )
    return out


def process_state_lines(data: dict | None) -> list[tuple[str, str, str, str]]:
    """What process_state.py found (INFO): the step after which a side moved, if any."""
    if not data or not data.get("lines"):
        return [("process_state (gpt2)", "not run", "", "INFO")]
    last = data["lines"][-1]
    return [
        (
            "process_state (gpt2)",
            data.get("summary") or f"stopped after: {last.get('added')}",
            f"{len(data['lines'])} line(s), see P.out",
            "INFO",
        )
    ]


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
        cg_lines(_load(folder, "E.json"))
        + gpt2_lines(
            _load(folder, "C.json"), _load(folder, "by_hand.jsonl"), _load(folder, "ref_gpt2.jsonl")
        )
        + encoder_lines(_load(folder, "A.json"), _load(folder, "ref.jsonl"))
        + process_state_lines(_load(folder, "P.json"))
    )


def main() -> int:
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    rows = lines(folder)
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':{width}}  | tcdoctor | the scripts | check")
    for name, ours, theirs, check in rows:
        print(f"{name:{width}}  | {ours} | {theirs} | {check}")
    return 1 if any(r[3].startswith("FAIL") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
