"""Ahead of time: torch.export with the traffic's dynamic shapes, an AOTInductor package built from
it, then loaded and served in a fresh process: the serving section's `aot` part.

Two functions, two processes (the serving child starts both; see `run` and `load_and_serve`):

1. `run(workload, requests, out_dir=..., deadline=...)`, in the serving child:
   - `torch.export.export(model, example, dynamic_shapes=...)` with one `torch.export.Dim` per
     group of dims the traffic varies, its range the traffic's (probes/export_findings.py says how,
     and the 0/1 specialisation as 2.13 has it: a Dim may start at 1; the *example* request must
     not hold a 0 or 1 there); `export_s` is that call's wall time (non-strict, 2.13's default).
   - When it fails: `torch.export.draft_export` on the same call, its failures as findings
     `{file, line, code, kind, why, fix}` (the deepest frame in the user's own files, PyTorch's
     words, the fix: `torch.cond` for a branch on tensor data, `torch._check` for another
     data-dependent assumption, the Dim's range and PyTorch's suggested fix for a guard on a dim).
   - When it exports: `torch._inductor.aoti_compile_and_package(ep, package_path=...)`, timed
     (`compile_s`: Inductor's lowering and the C++ build with the compiler Inductor uses,
     `cpp.cxx`), and the package's size (`package_bytes`). A build that fails (no compiler) is
     "not measured (why)" with PyTorch's first line. Beside the package (`aot-reference.pt`,
     probes/aot_reference.py): what the program accepts, and a few requests with their eager
     and fp64 outputs (the fresh process may not rebuild the same weights or requests).
2. `load_and_serve(package_path, requests, call=..., sync=..., deadline=...)`, in a FRESH process
   (a server's start: nothing compiled, nothing loaded): `torch._inductor.aoti_load_package`
   timed alone (`load_s`; importing `torch._inductor` is not in it: every process that imports
   torch._dynamo, tcdoctor's included, has imported it already), the same traffic served
   through the package by the one replay of the serving section (probes/traffic_replay.py: one
   request at a time, each synced on its own; a request that does not fit the program is kept
   from it and named, aot_reference.Gate), p50/p99 by nearest rank over the requests served,
   then the saved requests run through the package off the clock and compared with eager's
   outputs by the project's comparator (probes/numerics.py `compare`, tol 1e-4 for fp32).
`finish(built, served)` joins the two into the `aot` dict of the serving section.

Budget: each function gets its process's deadline (a `time.monotonic()` value, as every serving
part's). Nothing interrupts Inductor's build once started, so `run` does not start it with less
than MIN_BUILD_S left (the parent's deadline on the process is the backstop); the replay starts no
request past the deadline. Progress: each step is announced to `sink` (the serving process's event
sink) as a `start` and a `done` event whose phase is its label (`LABELS`), as the replays are.

Pitfalls: a package is specialised to what export saw: a non-tensor argument that varies across
the traffic is refused (export bakes in the example's value), and a package does not check its
inputs unless AOTI_RUNTIME_CHECK_INPUTS is set, so a request that does not fit the program (a
planted wrong rank) would be served garbage or crash the process: `Gate` keeps it from the package,
off the clock, and names it. A model that draws
random numbers is not compared (the package draws its own). The package holds the weights: its
size is the model's and more. Inductor's CPU ISA probe: `aoti_load_package` checks the machine's
vector ISA against the package's (`get_device_information` -> `pick_vec_isa`) in every new
process, which builds the probe's small libraries in an empty inductor cache folder (6 s here) or
loads them from one probed before (1 s here, in short subprocesses); measured on this machine,
that was all but 0.02 s of a 1.3 s first load. It is timed on its own before the load
(`isa_probe_s`, with the libraries it built, `isa_probe_builds`) so that `load_s` is the package's
own load, and likewise before the build (`build_isa_probe_s`): both depend on the cache folder
the serving child gives the process, not on the model. `first_request_s` (probe, load and the
first request) is what a server pays before its first answer, for the comparison with the JIT's
restart.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from ..stats import nearest_rank
from ..target.workload import CallArgs
from . import export_findings, isa_probe
from .aot_reference import (
    Gate,
    call_args_of,
    compare_with_eager,
    read_saved,
    request_index,
    save_reference,
)
from .outputs import first_line

PACKAGE = "aot-model.pt2"
REFERENCE = "aot-reference.pt"
MIN_BUILD_S = 30.0  # no C++ build is started with less of the part's budget left (tens of s each)
LABELS = {
    "export": "serving: ahead of time: torch.export with the traffic's dynamic shapes",
    "draft": "serving: ahead of time: draft_export (why export failed)",
    "build": "serving: ahead of time: building the AOTInductor package (C++ compile)",
    "load": "serving: ahead of time: loading the package in a fresh process",
    "serve": "serving: ahead of time: replaying {n} requests through the package",
}
DTRACE = "TORCH_DTRACE"  # torch._logging._internal.DTRACE_ENV_VAR: where draft_export logs
NOT_AN_MODULE = "torch.export takes an nn.Module; the target's model is a {kind}"


Sink = Callable[[dict], None]


@contextlib.contextmanager
def _step(sink: Sink | None, key: str, **fmt: Any) -> Iterator[None]:
    """One step announced as the serving parts announce theirs: a `start` event, then a `done`
    event with its seconds (also when the step failed: its failure is in the result)."""
    label = LABELS[key].format(**fmt)
    if sink is not None:
        sink({"event": "start", "phase": label})
    t = time.perf_counter()
    try:
        yield
    finally:
        if sink is not None:
            sink({"event": "done", "phase": label, "seconds": time.perf_counter() - t})


def _empty() -> dict:
    return {
        "exported": False,
        "findings": [],
        "export_s": None,
        "draft_export_s": None,
        "compile_s": None,
        "package_bytes": None,
        "build_isa_probe_s": None,
        "build_isa_probe_builds": None,
        "isa_probe_s": None,
        "isa_probe_builds": None,
        "load_s": None,
        "first_request_s": None,
        "latencies_s": [],
        "p50_s": None,
        "p99_s": None,
        "numerics": None,
        "dynamic_shapes": [],
        "example_request": None,
        "not_measured": {},
    }


def run(
    workload: Any,
    requests: Sequence[Any],
    *,
    out_dir: str,
    deadline: float,
    sink: Sink | None = None,
) -> dict:
    """Export the workload's model with the traffic's dynamic shapes, and build its package.

    `requests`: the traffic's requests (target/traffic.py Requests, or CallArgs); `out_dir`: where
    the package and the reference outputs are written; `deadline`: a `time.monotonic()` value.
    Returns the `aot` dict's first half plus `package_path` and `reference_path` (None when not
    built) for `load_and_serve`; never raises for the model's or the build's failures.
    """
    out = _empty()
    out["method"] = _method()
    model = workload.model
    if not isinstance(model, torch.nn.Module):
        out["not_measured"]["export"] = NOT_AN_MODULE.format(kind=type(model).__name__)
        return _built(out, None, None)
    reqs = _collect(requests, out)
    plan = export_findings.shape_plan([call_args_of(r) for r in reqs])
    out["dynamic_shapes"] = [
        {
            "name": d.name,
            "min": d.min,
            "max": d.max,
            "dims": [f"{p}.shape[{i}]" for p, i in d.where],
        }
        for d in plan.dims
    ]
    refused = _refuse(plan)
    if refused:
        out["not_measured"]["export"] = refused
        return _built(out, None, None)
    assert plan.example_index is not None
    example = call_args_of(reqs[plan.example_index])
    out["example_request"] = request_index(reqs[plan.example_index], plan.example_index)
    ep = _export(workload, example, plan, out, out_dir, sink)
    if ep is None:
        return _built(out, None, None)
    left = deadline - time.monotonic()
    if left < MIN_BUILD_S:
        out["not_measured"]["package"] = (
            f"deadline: {max(left, 0.0):.0f} s of the part's budget were left after export, and an "
            "AOTInductor build takes tens of seconds (none is started with under "
            f"{MIN_BUILD_S:.0f} s)"
        )
        return _built(out, None, None)
    package = _build(ep, os.path.join(out_dir, PACKAGE), out, sink)
    if package is None:
        return _built(out, None, None)
    reference = os.path.join(out_dir, REFERENCE)
    why = save_reference(workload, reqs, plan, reference)
    if why:
        out["not_measured"]["numerics"] = why
    return _built(out, package, reference if os.path.exists(reference) else None)


def _collect(requests: Iterable[Any], out: dict) -> list:
    """The traffic's requests as a list; a traffic that fails to produce one (its generator
    raised: target/traffic.py TrafficError) ends the list there, and `traffic_error` says so (the
    replay names it again when it serves the traffic)."""
    reqs: list = []
    it = iter(requests)
    while True:
        try:
            reqs.append(next(it))
        except StopIteration:
            return reqs
        except Exception as exc:  # noqa: BLE001 - the user's generator: one line, then stop
            out["traffic_error"] = first_line(exc)
            return reqs


def _built(out: dict, package: str | None, reference: str | None) -> dict:
    """`not_measured` names the first step that failed ("export": nothing after it ran;
    "package": exported, no package built); "numerics" when only the comparison is missing."""
    out["package_path"], out["reference_path"] = package, reference
    return out


def _refuse(plan: export_findings.ShapePlan) -> str | None:
    """Why the traffic cannot be served by one exported program, or None."""
    if plan.varying_values:
        return (
            "arguments other than tensors vary across the traffic "
            f"({', '.join(plan.varying_values)}): torch.export bakes the example's value into the "
            "program, so one package cannot serve them"
        )
    if plan.example_index is None:
        return plan.why_no_example
    return None


def _export(
    workload: Any,
    example: CallArgs,
    plan: export_findings.ShapePlan,
    out: dict,
    out_dir: str,
    sink: Sink | None,
) -> Any:
    """torch.export.export timed; on failure, draft_export's findings. The program or None."""
    model = workload.model
    try:
        shapes = export_findings.dynamic_shapes(model, example, plan)
    except Exception as exc:  # noqa: BLE001 - arguments the forward's signature does not bind
        out["not_measured"]["export"] = f"the traffic's arguments do not bind: {first_line(exc)}"
        return None
    kwargs = dict(example.kwargs) or None
    t = time.perf_counter()
    with _step(sink, "export"):
        try:
            with workload.context():
                ep = torch.export.export(model, tuple(example.args), kwargs, dynamic_shapes=shapes)
            out["export_s"] = time.perf_counter() - t
            out["exported"] = True
            return ep
        except Exception as exc:  # noqa: BLE001 - a model that does not export is a finding
            out["export_s"] = time.perf_counter() - t
            error = exc
    t = time.perf_counter()
    with _step(sink, "draft"):
        try:
            with workload.context(), _draft_log(out_dir):
                draft = torch.export.draft_export(
                    model, tuple(example.args), kwargs, dynamic_shapes=shapes
                )
            report = getattr(draft, "_report", None)
            found = export_findings.from_draft_report(report, str(error), plan)
        except Exception:  # noqa: BLE001 - draft_export refused too: the export error is the finding
            found = []
    out["draft_export_s"] = time.perf_counter() - t
    out["findings"] = found or [export_findings.from_error(error, plan)]
    out["not_measured"]["export"] = f"torch.export failed: {first_line(error)}"
    return None


@contextlib.contextmanager
def _draft_log(out_dir: str) -> Iterator[None]:
    """draft_export writes its structured log under $TORCH_DTRACE, else in a folder of the
    system's temp dir that nothing removes: it is pointed into `out_dir` for the call."""
    old = os.environ.get(DTRACE)
    os.environ[DTRACE] = os.path.join(out_dir, "draft-export-log")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DTRACE, None)
        else:
            os.environ[DTRACE] = old


def _build(ep: Any, path: str, out: dict, sink: Sink | None) -> str | None:
    """aoti_compile_and_package timed; the package path, or None with why."""
    import torch._inductor

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with _step(sink, "build"):
        probe = time_isa_probe()  # paid once per process, by its first C++ build: not in compile_s
        out["build_isa_probe_s"] = probe["isa_probe_s"]
        out["build_isa_probe_builds"] = probe["isa_probe_builds"]
        t = time.perf_counter()
        try:
            package = torch._inductor.aoti_compile_and_package(ep, package_path=path)
        except Exception as exc:  # noqa: BLE001 - no compiler, a lowering error: not measured (why)
            spent = time.perf_counter() - t
            out["not_measured"]["package"] = (
                f"the AOTInductor build failed after {spent:.1f} s: {first_line(exc)}"
            )
            return None
        out["compile_s"] = time.perf_counter() - t
    out["package_bytes"] = os.path.getsize(package)
    out["compiler"] = _compiler()
    return str(package)


def _compiler() -> str | None:
    """The C++ compiler Inductor used (its `cpp.cxx` resolved), for the method."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return str(get_cpp_compiler())
    except Exception:  # noqa: BLE001 - private helper; the method then names none
        return None


# --- the fresh process ---------------------------------------------------------------------------


def _default_call(fn: Any, args: CallArgs) -> Any:
    return fn(*args.args, **args.kwargs)


def load_and_serve(
    package_path: str,
    requests: Iterable[Any],
    *,
    call: Callable[[Any, CallArgs], Any] = _default_call,
    sync: Callable[[], None] = lambda: None,
    deadline: float,
    reference_path: str | None = None,
    n_requests: int | None = None,
    device: torch.device | None = None,
    sink: Sink | None = None,
) -> dict:
    """In a fresh process: load the package (timed), serve the traffic through it (the replay),
    compare the saved requests' outputs with eager's. The `aot` dict's second half.

    `requests`: the traffic's Requests, as the other serving processes get them; `call`, `sync`:
    as for every replay (the user's call, the device's drain); `deadline`: a `time.monotonic()`
    value after which no request starts; `reference_path`: what `run` saved beside the package;
    `device`: a CUDA device gets host and device times apart (`host_s`, `device_s`, as the
    replay gives them); `n_requests`: for the progress label only.
    """
    import torch._inductor  # imported already where torch._dynamo is: not in load_s

    from .traffic_replay import replay

    saved = read_saved(reference_path)
    out: dict = {"not_measured": {}}
    with _step(sink, "load"):
        out.update(time_isa_probe())
        t = time.perf_counter()
        try:
            runner = torch._inductor.aoti_load_package(package_path)
        except Exception as exc:  # noqa: BLE001 - a package that does not load is a finding
            out["not_measured"]["serve"] = f"aoti_load_package failed: {first_line(exc)}"
            return out
        out["load_s"] = time.perf_counter() - t
    gate = Gate(saved.get("accepts") or {})
    with _step(sink, "serve", n=n_requests if n_requests is not None else "the"):
        result = replay(runner, gate.stream(requests), call, sync, deadline=deadline, device=device)
    out.update(gate.merge(result))
    _percentiles(out)
    if getattr(result, "stopped", None):
        out["stopped"] = result.stopped
    out["numerics"] = compare_with_eager(runner, saved) if reference_path else None
    if out["numerics"] and out["numerics"].get("not_measured"):
        out["not_measured"]["numerics"] = out["numerics"]["not_measured"]
    return out


def _percentiles(out: dict) -> None:
    served = [x for x in out["latencies_s"] if x is not None]
    if served:
        out["p50_s"], out["p99_s"] = nearest_rank(served, 0.50), nearest_rank(served, 0.99)
    else:
        first = out["errors"][0]["message"] if out["errors"] else None
        out["not_measured"]["serve"] = "no request was served by the package" + (
            f": {first}" if first else ""
        )
    lat = out["latencies_s"]
    if lat and lat[0] is not None:
        out["first_request_s"] = (out.get("isa_probe_s") or 0.0) + out["load_s"] + lat[0]


def time_isa_probe() -> dict:
    """Inductor's CPU ISA probe, which `aoti_load_package` runs first in a fresh process (its
    metadata check, `get_device_information` -> `pick_vec_isa`, cached per process), timed on its
    own so that `load_s` is the package's load: `isa_probe_s`, and how many probe libraries it
    built in the process's inductor cache folder (`isa_probe_builds`: 0 in a folder probed before
    or seeded, where it only loads them; probes/isa_probe.py)."""
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError as exc:
        return {"isa_probe_s": None, "isa_probe_builds": None, "isa_probe_why": str(exc)}
    since = time.time()
    t = time.perf_counter()
    try:
        pick_vec_isa()
    except Exception as exc:  # noqa: BLE001 - no compiler: the build or load that follows says so
        return {"isa_probe_s": None, "isa_probe_builds": None, "isa_probe_why": first_line(exc)}
    seconds = time.perf_counter() - t
    try:
        built = len(isa_probe.builds(cache_dir(), since))
    except Exception:  # noqa: BLE001 - a folder that cannot be read: the count is unknown
        built = None
    return {"isa_probe_s": seconds, "isa_probe_builds": built}


def finish(built: dict, served: dict | None, why: str | None = None) -> dict:
    """The serving section's `aot` dict: `run`'s result joined with `load_and_serve`'s (None, with
    `why`, when the fresh process did not report: it crashed, or ran out of time)."""
    out = {k: v for k, v in built.items() if k not in ("package_path", "reference_path")}
    out["not_measured"] = dict(built.get("not_measured") or {})
    if built.get("package_path") is None:
        return out
    if served is None:
        out["not_measured"]["serve"] = (
            why or "the fresh process that loads the package did not report"
        )
        return out
    for key in (
        "isa_probe_s",
        "isa_probe_builds",
        "load_s",
        "first_request_s",
        "latencies_s",
        "p50_s",
        "p99_s",
        "numerics",
    ):
        if key in served:
            out[key] = served[key]
    for key in ("errors", "stopped", "host_s", "device_s"):
        if served.get(key):
            out[key] = served[key]
    out["not_measured"].update(served.get("not_measured") or {})
    return out


def _method() -> str:
    return (
        "export_s: wall time of torch.export.export(model, example request, dynamic_shapes) in the "
        "serving child (non-strict, 2.13's default), one Dim per group of dims the traffic varies, "
        "its range the traffic's min..max (dynamic_shapes), the example the first request whose "
        "dynamic dims are all >= 2 (example_request); when export fails, "
        "torch.export.draft_export on the same call names each failure (findings: the deepest "
        "frame in your own files, PyTorch's words, the fix; draft_export_s its time); compile_s: "
        "wall time of torch._inductor.aoti_compile_and_package(ep) (Inductor's lowering and the "
        "C++ build), after Inductor's CPU ISA probe, which the first build of a process pays and "
        "is timed before it (build_isa_probe_s; build_isa_probe_builds: probe libraries built, 0 "
        "in a cache folder probed before); package_bytes: the .pt2 file's size; in a fresh "
        "process (a server's start): isa_probe_s, the same probe, which aoti_load_package runs "
        "first in every process, timed before it; load_s: aoti_load_package alone (torch._inductor "
        "imported before, as by any process that imports torch._dynamo); first_request_s: "
        "isa_probe_s + load_s + the first request's latency; latencies_s: the traffic replayed "
        "through the package one request at a time, each synced on its own "
        "(probes/traffic_replay.py, as the eager and compiled sides); p50_s/p99_s: nearest rank "
        "over the requests served; numerics: the package's outputs against eager's (its method)"
    )
