"""The serving section's detail parts, described once (report/layout.py): the warm-up (whose, its
requests, its proof, its script, its time cold and warm), the restart (the time to the first
request, PyTorch's cache counters and reasons, what compiled again), host time and threads, and
the ahead-of-time part (export findings with the user's line, why and the fix; or the build, the
load against the JIT restart, p50/p99 against the JIT, numerics). render/serving.py places the
key rows of each among the section's figures and these sections after them (the files).

Every figure is written by units.py; a part not measured says why.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Row, Section, Table, Text, notes, where
from ..report.sections.serving import HostRow, Serving

WARMUP = "Warm-up"
RESTART = "Restart"
HOST = "Host time, requests per second and threads"
AOT = "Ahead of time (torch.export + AOTInductor)"
YOURS = "your Traffic(warmup=...)"


def unmeasured(s: Serving, *parts: str) -> str:
    """'not measured (why)' for the first of `parts` the section says why of."""
    why = next((s.not_measured[p] for p in parts if s.not_measured.get(p)), None)
    return f"{units.NA} ({why})" if why else units.NA


def threads_text(s: Serving) -> str:
    """'4 threads: outputs equal to eager's, 211 → 16 requests/s' or what failed."""
    th = s.threads
    if th is None:
        return unmeasured(s, "host", "threads")
    speed = f"{units.rate(th.rps_one)} in one thread, {units.rate(th.rps_n)} in {th.n}"
    if th.compiles:  # in the threads' figure: say so, with PyTorch's reason
        why = f": {th.compile_reasons[0]}" if th.compile_reasons else ""
        speed += f" ({th.compiles} compile(s) inside the threaded run, in that figure{why})"
    if th.error or th.ok is False:
        return f"{th.n} threads: FAILED: {th.error or '; '.join(th.errors) or 'see the JSON'}"
    if th.outputs_equal is False:
        return f"{th.n} threads: outputs DIFFER from eager's (requests {units.indices(th.mismatches)}); {speed}"
    return f"{th.n} threads: outputs equal to eager's; {speed}"


def proof_text(s: Serving) -> str:
    """The proof in words: proven, not proven (the first request that would compile, with the
    guard in PyTorch's words), the eager fallback, or not measured (why)."""
    w = s.warmup
    proof = w.proof if w else None
    side = s.compiled
    if w is None:
        return unmeasured(s, "proof", "replay")
    n = w.user.requests if w.source == "yours" and w.user else len(w.requests)
    whose = YOURS if w.source == "yours" else "derived from the traffic's compiles"
    head = f"{units.count(n)} request(s), {whose}"
    if proof is None:
        return f"{head}; proof {unmeasured(s, 'proof')}"
    if proof.proven:
        return f"{head}: PROVEN in a fresh process (no request of the traffic compiled after it)"
    first = (proof.compiled_requests or [{}])[0]
    if first.get("request") is not None:
        more = len(proof.compiled_requests) - 1
        return (
            f"{head}: NOT proven: request {first['request']} {first.get('shapes') or ''} would "
            f"compile ({first.get('reason') or 'a frame not compiled yet'})"
            + (f", and {more} more" if more > 0 else "")
        )
    if side is not None and side.fallback_requests:
        return f"{head}: NOT proven: recompile_limit was reached (no warm-up covers this traffic)"
    return f"{head}: not proven ({proof.why or 'no request served'})"


def warmup_rows(s: Serving) -> list[Row]:
    """The warm-up's key rows: its proof, its time cold and warm."""
    w = s.warmup
    proven = w.proof.proven if w and w.proof else None
    rows = [
        Row(
            "warm-up",
            proof_text(s),
            (w.proof.method if w and w.proof else "") or "",
            alarm=proven is False,
        )
    ]
    if w is not None:
        rows.append(
            Row(
                "warm-up time cold / warm",
                units.pair(units.seconds, w.seconds_cold, w.seconds_warm),
                "cold: a fresh process, an empty cache; warm: a fresh process, a copy of the "
                "replay's cache",
            )
        )
    return rows


def warmup_section(s: Serving, base_dir: str | None = None) -> Section | None:
    """The warm-up's requests (one per compile it covers, with the guards), its script, its
    proof's requests that would compile, and the user's own warm-up's requests."""
    w = s.warmup
    if w is None:
        return None
    rows = [
        Row("requests", _requests_text(s), w.method or ""),
        Row("proof", proof_text(s), (w.proof.method if w.proof else "") or ""),
        Row("script", _script(w.script_path, base_dir, w.script), "the start-up script: run it "
            "before serving (its text is in the JSON report: serving.warmup.script)"),
        Row("time cold / warm", units.pair(units.seconds, w.seconds_cold, w.seconds_warm)),
    ]  # fmt: skip
    tables = []
    if w.signatures:
        tables.append(
            Table(
                ("request", "shapes", "compiles it covers (the guard that failed)"),
                [
                    [
                        units.count(sig.get("request")),
                        Text(sig.get("shapes") or units.NA),
                        "; ".join(_guard(c) for c in sig.get("compiles") or []),
                    ]
                    for sig in w.signatures
                ],
                code=(1,),
            )
        )
    if w.user is not None:
        u = w.user
        tables.append(
            Table(
                ("your warm-up request", "shapes", "seconds"),
                [
                    [str(i), Text(shapes), units.seconds(lat)]
                    for i, (shapes, lat) in enumerate(zip(u.shapes, u.latencies_s))
                ],
                code=(1,),
            )
        )
    lines = [
        f"request {c.get('request')} {c.get('shapes') or ''}: would compile "
        f"({c.get('reason') or 'a frame not compiled yet'})"
        for c in (w.proof.compiled_requests if w.proof else [])
    ]
    lines += [f"your warm-up: {e.get('message')}" for e in (w.user.errors if w.user else [])]
    return Section(WARMUP, rows=tuple(rows), tables=tuple(tables), notes=notes(lines))


def _requests_text(s: Serving) -> str:
    w = s.warmup
    assert w is not None
    derived = f"requests {units.indices(w.requests)} of the traffic"
    if w.source == "yours" and w.user is not None:
        still = f"; after it, {derived} still compiled" if w.requests else ""
        return (
            f"{YOURS}: {units.count(w.user.requests)} request(s), served first, "
            f"{w.user.made} compile(s), {units.seconds(w.user.seconds)}{still}"
        )
    if not w.requests:
        return "none: no request of the traffic compiled"
    return f"{derived}: one per compile the traffic triggered"


def _guard(c: dict) -> str:
    return f"{c.get('kind')}: {c.get('reason') or 'first compile of the frame'}"


def _script(path: str | None, base_dir: str | None, text: str | None) -> Text:
    """The script's path (linked in the HTML), or where its text is."""
    if path:
        return Text(path, where(path, None).short, units.relative_link(path, base_dir))
    if text:
        return Text("not written (its text is in the JSON report: serving.warmup.script)")
    return Text(units.NA)


def restart_section(s: Serving) -> Section | None:
    """The restart: the time to the first request, the caches in PyTorch's words, what compiled
    again (tracing is not a cache miss)."""
    r = s.restart
    if r is None:
        return None
    again = r.compiled_again or {}
    rows = (
        Row("first request after the spawn", units.seconds(r.first_request_s), r.method or ""),
        Row("import torch / build()", units.pair(units.seconds, r.import_s, r.build_s)),
        Row("caches", "; ".join(r.hit) or units.NA, "PyTorch's counters over the warm-up"),
        Row(
            "compiled again",
            f"Dynamo traced {units.count(again.get('traced_frames'))} frame(s) again (tracing, "
            "not a cache miss: Dynamo keeps nothing across processes); Inductor compiled "
            f"{units.count(again.get('inductor_compiled'))}, AOTAutograd "
            f"{units.count(again.get('aot_autograd_compiled'))} graph(s) again",
        ),
    )
    lines = [f"PyTorch: {x}" for x in r.reasons]
    return Section(RESTART, rows=rows, notes=notes(lines))


def _host_cells(name: str, row: HostRow | None, device: bool) -> list[str]:
    """One row of the host table; `device`: the device time's column is drawn (CUDA)."""
    if row is None:
        return [name, units.NA, units.NA, *([units.NA] if device else []), units.NA, ""]
    same = {True: "outputs equal to the guarded run's", False: "outputs DIFFER"}.get(
        row.outputs_equal, ""
    )  # type: ignore[arg-type]
    return [
        name,
        units.seconds(row.host_s),
        units.seconds(row.wall_s),
        *([units.seconds(row.device_s)] if device else []),
        units.rate(row.max_rps),
        same,
    ]


NO_DEVICE = (
    "device time: not measured (on CPU the host thread runs the kernels: the host time is the "
    "latency)"
)


def host_section(s: Serving) -> Section | None:
    """Host against device time per request, requests/s per process, the threads' row. Without
    a device time (CPU) its column is left out and a line says why."""
    h, th = s.host, s.threads
    if h is None and th is None:
        return None
    tables, lines = [], []
    if h is not None:
        named = [("eager", h.eager), ("compiled", h.compiled)]
        if h.skip_guards is not None:
            named.append(("compiled, skip_guard_eval_unsafe", h.skip_guards))
        device = any(row is not None and row.device_s is not None for _, row in named)
        headers = ("", "host / request", "wall / request",
                   *(["device / request"] if device else []), "most requests/s", "")  # fmt: skip
        tables.append(Table(headers, [_host_cells(n, row, device) for n, row in named]))
        lines += [] if device else [NO_DEVICE]
    lines.append(threads_text(s))
    if th is not None and th.same_as_one_thread is False:
        lines.append("threaded outputs differ from one thread's bit for bit")
    how = [Note(x, how=True) for x in (h.method if h else None, th.method if th else None) if x]
    return Section(HOST, tables=tuple(tables), notes=notes(lines) + tuple(how))


def aot_section(s: Serving) -> Section | None:
    """The ahead-of-time part: export findings (the user's line, why, the fix), or the build,
    the load against the JIT restart, p50/p99 against the JIT, numerics; what was not measured."""
    aot = s.aot
    if aot is None:
        return None
    proof = s.warmup.proof if s.warmup else None
    jit_first = s.restart.first_request_s if s.restart else None
    num = aot.numerics or {}
    rows = (
        Row("exported", "yes" if aot.exported else "no", ""),
        Row("export / build", units.pair(units.seconds, aot.export_s, aot.compile_s),
            "torch.export.export; aoti_compile_and_package (Inductor's lowering and the C++ build)"),
        Row("package", units.nbytes(aot.package_bytes)),
        Row("load / first request after the spawn",
            units.pair(units.seconds, aot.load_s, aot.first_request_s)
            + f" (the JIT restart's first request: {units.seconds(jit_first)})"),
        Row("p50 / p99 AOT vs JIT after the warm-up",
            f"{units.pair(units.seconds, aot.p50_s, aot.p99_s)} vs "
            f"{units.pair(units.seconds, proof.p50_s if proof else None, proof.p99_s if proof else None)}"),
        Row("numerics vs eager", aot.numerics_status or units.NA, num.get("method") or ""),
    )  # fmt: skip
    findings = aot.findings
    tables = ()
    if findings:
        tables = (
            Table(
                ("where", "code", "why (PyTorch)", "fix"),
                [
                    [
                        where(f.get("file"), f.get("line")),
                        f.get("code") or "",
                        f.get("why") or "",
                        f.get("fix") or "",
                    ]
                    for f in findings
                ],  # fmt: skip
                code=(0, 1),
            ),
        )
    lines = [f"{k}: {units.NA} ({v})" for k, v in aot.not_measured.items()]
    return Section(AOT, rows=rows, tables=tables, notes=notes(lines), method=aot.method or "")
