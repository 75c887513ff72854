"""Graphs and graph breaks of one call, counted as PyTorch counts them, each with its full reason.

`torch._dynamo.explain` gives the graphs, but loses reasons (data-dependent branches show
as `generic_jump TensorVariable()`) and records nothing when a whole frame is skipped
(a break inside a loop: graph_count 0, graph_break_count -1). Dynamo's graph-break log
has every break, so findings come from the log and explain supplies the graphs.

The counts the report shows are taken on the user's own compile: the compile phase's first call
(your backend, mode and compile arguments, DDPOptimizer on under DDP as in your job) runs with the
same log captured and PyTorch's counters cleared first, and `counted` reads them right after it;
`report.counts.use_compile_counts` puts them in the report, keeping explain's run as
`explain_run_*` and `explain_graph_*` beside them (explain compiles with its own backend, hence
without DDPOptimizer, so under DDP its figures are for a configuration the user does not run).
explain still supplies the graphs' op lists (`per_graph`) and the figures when the compile phase
did not finish.

Pitfalls: the graph count is Dynamo's own counter (`counters['stats']['unique_graphs']`), not
explain's list, which holds whatever its backend was handed: under DDP, DDPOptimizer hands it one
subgraph per gradient bucket, so explain runs with DDPOptimizer off (see `_explain`). The subject
must be compiled as the user would compile it: a frame of tcdoctor's own around it adds a break
(see training.py).
"""

from __future__ import annotations

import functools
import json
import linecache
import os
import re
from typing import Any

import torch
import torch._dynamo

from .. import pysource
from ..target.userframes import (
    ORIGINS,
    deepest_user_frame,
    origin_of,
    package_of,
    readable_function,
    source_line,
)
from ..target.workload import CallArgs, as_inputs
from . import dynamo_state
from .context import PhaseContext
from .dynamo_state import _Collector

_HEADER = re.compile(
    r"Graph break(?P<dup> \(user stack suppressed[^)]*\))? in user code at (?P<file>.*):(?P<line>\d+)"
)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)')
_LINK = re.compile(r"https://\S+/gb/gb(\d+)\.html")
SKIP_MARK = "Skipping the function and falling back to eager"

DEFINITION = (
    "Graph breaks Dynamo took while tracing one call of the model: one per record in Dynamo's "
    "graph-break log, which equals the total of torch._dynamo.utils.counters['graph_break'] plus "
    "the data-dependent branches and skipped frames Dynamo files under counters['unimplemented'] "
    "(a skipped frame counts once). torch._dynamo.explain's graph_break_count counts boundaries "
    "between graphs instead, so two breaks with no op between them count once there, and a "
    "skipped frame shows as -1; it is kept as explain_graph_break_count."
)


GRAPHS_DEFINITION = (
    "Graphs Dynamo compiled while tracing one call: torch._dynamo.utils.counters['stats']"
    "['unique_graphs']. DDPOptimizer's per-bucket subgraphs are not counted (explain runs with it "
    "off, so per_graph lists Dynamo's graphs); they are reported in the ddp section."
)


COUNTS_SOURCE = (
    "the compile you run (your backend, mode and compile arguments; DDPOptimizer as configured): "
    "PyTorch's counters and graph-break log on its first call, in the compile phase"
)
EXPLAIN_SOURCE = (
    "torch._dynamo.explain's traced call (its own backend; DDPOptimizer off), used only where the "
    "compile phase did not finish"
)


@functools.lru_cache(maxsize=1)
def registry() -> dict:
    path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def parse_record(message: str) -> dict:
    """Split one graph-break log record into header location, reason parts and user stack."""
    head = _HEADER.search(message)
    body = (
        message.split("Graph Break Reason:", 1)[1] if "Graph Break Reason:" in message else message
    )
    reason_text, _, tb = body.partition("User code traceback:")
    lines = [ln.rstrip() for ln in reason_text.strip().splitlines()]
    gb_type, explanation, hints = None, None, []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("Explanation:") and gb_type is None:
            # the line before the first Explanation names the root cause's type
            prev = [x.strip() for x in lines[:i] if x.strip()]
            gb_type = prev[-1] if prev else None
            explanation = s[len("Explanation:") :].strip()
        elif s.startswith("Hint:"):
            h = s[len("Hint:") :].strip()
            if h not in hints:
                hints.append(h)
    first = lines[0].strip() if lines else message.splitlines()[0]
    gb_ids = [f"GB{int(n):04d}" for n in _LINK.findall(reason_text)]
    links = _LINK.finditer(reason_text)
    frames = [(m["file"], int(m["line"]), m["func"].strip()) for m in _FRAME.finditer(tb)]
    return {
        "header_file": head["file"] if head else None,
        "header_line": int(head["line"]) if head else None,
        "suppressed_stack": bool(head and head["dup"]),
        "gb_type": gb_type or first,
        "explanation": explanation,
        "hints": hints,
        "gb_id": gb_ids[0] if gb_ids else None,
        "doc_urls": [m.group(0) for m in links],
        "frame_skipped": SKIP_MARK in reason_text,
        "in_loop": "graph break in loop" in reason_text,
        "frames": frames,
        "full_reason": reason_text.strip(),
    }


def _site(rec: dict) -> dict:
    """Where the break happens: the innermost traced frame (the log header's file:line)."""
    frames = rec["frames"]
    file, line = rec["header_file"], rec["header_line"]
    func = None
    if frames and (file is None or (frames[-1][0] == file and frames[-1][1] == line)):
        file, line, func = frames[-1]
    elif frames:
        func = next((fn for f, ln, fn in reversed(frames) if f == file), None)
    return {
        "file": file,
        "line": line,
        "function": func,
        "code": source_line(file, line) if file and line else "",
    }


def attribute(rec: dict, frames: list, tracer_frames: list) -> tuple[dict, dict, str]:
    """(the user's frame that leads to the break, where it happens, who owns that code).

    The user's frame is the deepest one of theirs in Dynamo's traceback, else in the chain of
    frames Dynamo was tracing when it logged the break (a library frame traced on its own has
    no user frame in its traceback), else the break site itself.
    """
    site = _site({**rec, "frames": frames})
    origin = origin_of(site["file"])
    user = deepest_user_frame(frames) or deepest_user_frame(tracer_frames)
    if user is None:
        user = dict(site)
    called = called_api(rec)
    if origin in ("user", "step") and called:  # the caller's line, PyTorch's limitation
        called = {**called, "from": origin}
        origin = origin_of(called["file"]) if called.get("file") else "pytorch"
        site = {**site, "called": called}
    return user, site, origin


def _library(site: dict, origin: str) -> str | None:
    """The package whose code the break is in ('transformers', 'torch'), for code the user did not write."""
    if origin not in ("library", "pytorch"):
        return None
    called = site.get("called")
    if called:
        return package_of(called.get("file")) or "torch"
    return package_of(site["file"])


SKIPPED_QUALNAME = re.compile(r"qualname: ([\w.<>]+)")
SKIPPED_FILE = re.compile(r"filename: `([^`]+)`")


def called_api(rec: dict) -> dict | None:
    """The PyTorch (or library) API a line calls that Dynamo cannot trace, when that is the break:
    `loss.backward()`, or a function Dynamo marks as skipped (`Optimizer.zero_grad`). The line is the
    user's (or tcdoctor's standard step, written as a user writes it), the limitation is PyTorch's."""
    reason = rec.get("gb_type") or ""
    if reason.startswith("Unsupported Tensor.backward()"):
        return {"function": "Tensor.backward", "file": None}
    if "marked as skipped" in reason:
        text = rec.get("full_reason") or ""
        q, f = SKIPPED_QUALNAME.search(text), SKIPPED_FILE.search(text)
        if f and origin_of(f.group(1)) != "user":
            return {"function": q.group(1) if q else None, "file": f.group(1)}
    return None


# "Developer debug context: frame skipped: forward (/path/model.py line 34)" (GB7000 and others)
_SKIPPED_CONTEXT = re.compile(r"frame skipped: (?P<name>\S+) \((?P<file>.+?) line (?P<line>\d+)\)")


@functools.lru_cache(maxsize=64)
def _functions(filename: str) -> tuple[tuple[int, int, int, str], ...]:
    """(first line incl. decorators, def line, end line, qualified name) of each function in a file."""
    try:
        return pysource.functions("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return ()


def function_at(filename: str, line: int, name: str | None, first_line: bool) -> dict | None:
    """{"function": qualified name, "line": its def line} of the function whose code starts at
    `line` (a code object's co_firstlineno: its first decorator or its def), or else, unless
    `first_line`, the innermost one containing `line`; None when the source says nothing."""
    fns = _functions(filename) if filename else ()
    exact = [
        f for f in fns if line in (f[0], f[1]) and (not name or f[3].rsplit(".", 1)[-1] == name)
    ]
    if exact:
        return {"function": exact[0][3], "line": exact[0][1]}
    inner = [f for f in fns if f[0] <= line <= f[2] and (not name or f[3].endswith(name))]
    if inner and not first_line:
        f = max(inner, key=lambda f: f[0])
        return {"function": f[3], "line": f[1]}
    return None


def _is_entry(compile_id: str | None) -> bool | None:
    """Frame 0 of a fresh Dynamo state is the first frame of the call Dynamo saw: the compiled
    callable's own (the model's forward, the step function). None when the id is not known."""
    if not compile_id:
        return None
    return bool(re.match(r"^\W*0/", compile_id))


def skipped_frame(rec: dict, tracer_frames: list, compile_id: str | None) -> dict | None:
    """The frame Dynamo skipped (ran eagerly) for a skip record: named by Dynamo's debug context
    ("frame skipped: forward (FILE line N)"), else the outermost frame it was tracing."""
    if not rec["frame_skipped"]:
        return None
    m = _SKIPPED_CONTEXT.search(rec.get("full_reason") or "")
    if m:
        file, line, name, first_line = m["file"], int(m["line"]), m["name"], True
    elif tracer_frames:
        file, line, name = tracer_frames[0]
        first_line = False
    else:
        return None
    fn = function_at(file, line, name, first_line) or {}
    return {
        "function": fn.get("function") or readable_function(name),
        "file": file,
        "line": fn.get("line") or (line if first_line else None),
        "entry": _is_entry(compile_id),
    }


def findings_from_messages(
    messages: list, tracer_frames: list | None = None, compile_ids: list | None = None
) -> list[dict]:
    """Group identical breaks (same reason, same user location, same site) with an occurrence count.

    `compile_ids[i]`: the compile id Dynamo was compiling when it logged message i (for a skipped
    frame: whether it is the call's entry frame)."""
    stacks: dict[tuple, list] = {}
    groups: dict[tuple, dict] = {}
    for i, msg in enumerate(messages):
        rec = parse_record(msg)
        loc = (rec["header_file"], rec["header_line"])
        frames = rec["frames"] or stacks.get(loc, [])
        if rec["frames"]:
            stacks[loc] = rec["frames"]
        traced = (tracer_frames or [])[i] if tracer_frames else []
        user, site, origin = attribute(rec, frames, traced)
        skipped = skipped_frame(rec, traced, (compile_ids or [])[i] if compile_ids else None)
        key = (
            rec["gb_type"],
            user["file"],
            user["line"],
            rec["frame_skipped"],
            site["file"],
            site["line"],
            (skipped or {}).get("file"),
            (skipped or {}).get("line"),
        )
        if key in groups:
            groups[key]["occurrences"] += 1
            continue
        reg = registry().get(rec["gb_id"] or "", [])
        reg_entry = reg[-1] if reg else {}
        groups[key] = {
            "reason": rec["gb_type"],
            "gb_id": rec["gb_id"],
            "explanation": rec["explanation"] or reg_entry.get("Explanation"),
            "hints": rec["hints"] or [h.strip() for h in reg_entry.get("Hints", [])],
            "doc_url": rec["doc_urls"][0] if rec["doc_urls"] else None,
            "file": user["file"],
            "line": user["line"],
            "function": user["function"],
            "code": user["code"],
            "origin": origin,
            "origin_text": ORIGINS[origin],
            "library": _library(site, origin),
            "site": site,
            "frame_skipped": rec["frame_skipped"],
            "skipped_frame": skipped,
            "in_loop": rec["in_loop"],
            "occurrences": 1,
            "full_reason": rec["full_reason"][:4000],
            "user_stack": [{"file": f, "line": ln, "function": fn} for f, ln, fn in frames][-8:],
        }
    ordered = sorted(
        groups.values(), key=lambda g: (-g["occurrences"], g["file"] or "", g["line"] or 0)
    )
    for i, g in enumerate(ordered, 1):
        g["id"] = f"B{i}"  # what fixes[].addresses refer to
    return ordered


def unlogged_unimplemented(unimplemented: dict, findings: list[dict]) -> list[dict]:
    """Steps Dynamo could not trace and filed only under counters['unimplemented'] (no graph-break
    log record, e.g. `step_unsupported` in some releases): code after them ran eagerly. Listed, not counted."""
    known = {f["reason"] for f in findings}
    out = []
    for key, n in unimplemented.items():
        first = key.strip().splitlines()[0] if key.strip() else key
        if (
            first in known
            or first.startswith("graph break in loop")
            or any(first in (f.get("full_reason") or "") for f in findings)
        ):
            continue
        out.append({"reason": first, "occurrences": int(n), "detail": key[:2000]})
    return out


def _graph_info(gm: Any) -> dict:
    nodes = list(gm.graph.nodes)
    ops = [n for n in nodes if n.op in ("call_function", "call_method", "call_module")]
    origin = None
    for n in ops:
        st = n.meta.get("stack_trace") or ""
        frames = [(m["file"], int(m["line"]), m["func"].strip()) for m in _FRAME.finditer(st)]
        origin = deepest_user_frame(frames)
        if origin:
            break
    return {
        "nodes": len(nodes),
        "ops": len(ops),
        "function": readable_function(origin["function"]) if origin else None,
        "file": origin["file"] if origin else None,
        "line": origin["line"] if origin else None,
    }


def _explain(model: Any, call_args: CallArgs) -> Any:
    """explain's graphs are the ones its backend is handed. Under DDP, DDPOptimizer (optimize_ddp's
    default mode) hands the backend one subgraph per gradient bucket instead of Dynamo's graph, so
    explain would count buckets as graphs: it is turned off for this one traced call. Tracing, and so
    every graph and break, is Dynamo's either way; the split is DDP's, counted by probes/ddp.py in
    the compile phase, where DDPOptimizer runs as it does for the user."""
    explain = torch._dynamo.explain(model)
    if dynamo_state.optimize_ddp_mode() != "ddp_optimizer":
        return explain(*call_args.args, **call_args.kwargs)
    with torch._dynamo.config.patch(optimize_ddp=False):
        return explain(*call_args.args, **call_args.kwargs)


def tally(collector: _Collector) -> dict:
    """Graphs and breaks of the calls made while `collector` listened, as PyTorch counts them:
    `counters['stats']['unique_graphs']`, one break per graph-break log record (the total of
    `counters['graph_break']` plus the `counters['unimplemented']` entries the log also records),
    each grouped into findings. Read right after the calls, before anything else compiles."""
    records = dynamo_state.graph_break_records(collector)
    messages = [m for m, _ in records]
    compile_ids = [  # the compile id of each graph-break record, in the same order
        collector.compile_ids.get(i)
        for i, (name, _, _) in enumerate(collector.records)
        if name.endswith("__graph_breaks")
    ]
    findings = findings_from_messages(messages, [f for _, f in records], compile_ids)
    return {
        "graphs": dynamo_state.counter("stats", "unique_graphs"),
        "graph_breaks": len(messages),
        "dynamo_counters_graph_break": sum(dynamo_state.counters_of("graph_break").values()),
        "skipped_frames": sum(f["occurrences"] for f in findings if f["frame_skipped"]),
        "unlogged_fallbacks": unlogged_unimplemented(
            dynamo_state.counters_of("unimplemented"), findings
        ),
        "unique": findings,
    }


def counted(collector: _Collector) -> dict:
    """The counts of the user's own compile (the compile phase's first call): what the report shows."""
    return {**tally(collector), "source": COUNTS_SOURCE}


def probe(model: Any, call_args: Any) -> dict:
    """Run explain once (no real backend) with the graph-break log captured; a tuple is positional inputs.

    The compile phase's first call replaces these counts with the user's own compile's
    (`counted`, merged by `report.counts.use_compile_counts`); explain's stay as `explain_*`."""
    if not isinstance(call_args, CallArgs):
        call_args = CallArgs(as_inputs(call_args))
    dynamo_state.fresh()
    with dynamo_state.dynamo_logs() as logs:
        out = _explain(model, call_args)
    t = tally(logs)
    dynamo_state.fresh()
    return {
        "graphs": {
            "count": t["graphs"],
            "definition": GRAPHS_DEFINITION,
            "explain_graph_count": out.graph_count,
            "per_graph": [_graph_info(g) for g in out.graphs],
            "explain_op_count": out.op_count,
            "source": EXPLAIN_SOURCE,
        },
        "graph_breaks": {
            "count": t["graph_breaks"],
            "definition": DEFINITION,
            "explain_graph_break_count": out.graph_break_count,
            "dynamo_counters_graph_break": t["dynamo_counters_graph_break"],
            "skipped_frames": t["skipped_frames"],
            "unlogged_fallbacks": t["unlogged_fallbacks"],
            "unique": t["unique"],
            "source": EXPLAIN_SOURCE,
        },
    }


def break_sites(collector: _Collector) -> list[dict]:
    """Where each logged break happened (the log header's file:line) and the compile id it ended."""
    out = []
    for i, (name, _, m) in enumerate(collector.records):
        if name.endswith("__graph_breaks"):
            rec = parse_record(m)
            out.append(
                {
                    "compile_id": collector.compile_ids.get(i),
                    "file": rec["header_file"],
                    "line": rec["header_line"],
                }
            )
    return out


def phase_graph_breaks(ctx: PhaseContext) -> dict:
    """The graph_breaks phase: explain() on a fresh copy, RNG reset (ctx: the run.runner.PhaseRunner)."""
    from ..target.pristine import reset_rng_state

    subject = ctx.fresh()
    reset_rng_state()
    with ctx.workload.context(ctx.device.type):
        return probe(subject.fn, ctx.workload.call_args)
