"""Can Python keep up: host against device time per request, the most requests per second one
Python process can drive, and the same traffic served from several threads in one process.

Method (the `host` part, run/serving/host.py: one fresh process started from an empty cache folder seeded with the
machine's probed ISA checks):
1. The warm-up set is served on a freshly compiled model: its time is the warm-up's cold figure
   (`warmup_s`: an empty cache, a fresh process).
2. The traffic is replayed eager, then compiled, one request at a time (probes/traffic_replay.py),
   so guards and torch.compile's wrapper are in every compiled request. Per request the host time
   is what the Python thread spends until the call returns; on CUDA that is apart from the device
   time (the call returns once the kernels are queued), on CPU the host thread runs the kernels and
   the host time is the latency. The most requests per second one process can drive is
   1 / median host time: beyond it Python, not the device, is the bottleneck.
3. `skip_guard_eval_unsafe` (`torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)`,
   the article's tip against guard overhead) as a tried row: the traffic replayed again with it,
   the outputs compared with the guarded run's for the first SAMPLE requests (it runs only the
   guards that tell the cache entries apart: a request that needs another entry may run the wrong
   one). Tried when the compiled side compiled anything (guards exist); the verdict weighs it where
   guards take a material share of a call.
4. Threads: the first SAMPLE requests (those eager serves) served by THREADS threads of this process from one queue
   (each thread takes the next request), after eager served them in one thread (the reference
   outputs) and the compiled model served them in one thread (requests/s of one thread). Each
   threaded output is compared with eager's by the numerics rule (probes/numerics.py
   `compare_leaf`), and with the one-thread compiled output bit for bit. A thread that raises is
   named with its request; a thread still running when the part's time runs out is said so. The
   article says multithreading "is currently buggy": what happens is reported, never a crash (a
   crash of the process is the parent's one line, the rest of the report kept).

Pitfalls: the intra-op thread count (--threads) applies to every serving thread's ops; a model
that keeps state per call is not thread-safe whatever the compiler does (outputs then differ from
eager's in the eager-threaded sense too: that is the model, and it is said as a mismatch).
"""

from __future__ import annotations

import itertools
import queue
import statistics
import threading
import time
from typing import Any

import torch

from . import dynamo_state
from .first_call import function_name
from .outputs import flatten
from .recompiles import plain_reason
from .traffic_replay import ReplayResult, ServeContext

THREADS = 4
SAMPLE = 64  # requests whose outputs are kept and compared (the threads serve these)


def host_row(result: ReplayResult, cuda: bool) -> dict | None:
    """Median host and wall time per request, and the most requests/s one process can drive."""
    wall = result.served
    if not wall:
        return None
    host = [x for x in (result.host_s or []) if x is not None] if cuda else wall
    median_host = statistics.median(host)
    return {
        "host_s": median_host,
        "wall_s": statistics.median(wall),
        "device_s": statistics.median([x for x in result.device_s or [] if x is not None])
        if cuda and result.device_s
        else None,
        "max_rps": 1.0 / median_host if median_host > 0 else None,
        "requests": len(wall),
    }


def keeper(store: dict) -> Any:
    def keep(index: int, out: Any) -> None:
        if index < SAMPLE:
            store[index] = out

    return keep


def _differs(a: Any, b: Any) -> bool:
    """Whether two outputs differ in any leaf, bit for bit."""
    la, lb = flatten(a), flatten(b)
    if [p for p, _ in la] != [p for p, _ in lb]:
        return True
    for (_, x), (_, y) in zip(la, lb):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return True
        elif type(x) is not type(y) or (not isinstance(x, torch.Tensor) and x != y):
            return True
    return False


def _passes(eager: Any, compiled: Any) -> bool:
    """compiled's output passes against eager's by the numerics rule, leaf by leaf."""
    from .numerics import compare_leaf

    le, lc = flatten(eager), flatten(compiled)
    if [p for p, _ in le] != [p for p, _ in lc]:
        return False
    return all(compare_leaf(p, e, c, None).passed is not False for (p, e), (_, c) in zip(le, lc))


def skip_guards_row(serve: ServeContext, compiled: Any, guarded: dict, cuda: bool) -> dict:
    """The traffic again with skip_guard_eval_unsafe=True: its host row, and its outputs against
    the guarded run's."""
    outs: dict = {}
    torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
    try:
        result = serve.replay(
            compiled, "serving: host time (compiled, skip_guard_eval_unsafe)", keep=keeper(outs)
        )
    finally:
        torch.compiler.set_stance("default", skip_guard_eval_unsafe=False)
    row = host_row(result, cuda) or {}
    both = sorted(set(outs) & set(guarded))
    row.update(
        outputs_equal=not any(_differs(outs[i], guarded[i]) for i in both) if both else None,
        compared=len(both),
        errors=result.errors,
    )
    return row


def reason_of(m: Any) -> str:
    """Why a compile happened inside the threaded run, in PyTorch's words (its recompile reason,
    or its first compile of the frame): a compile there is in the threads' requests/s, and a
    thread that compiles what one thread did not is what the article's "multithreading is buggy"
    looks like from outside."""
    reason = getattr(m, "recompile_reason", None)
    where = function_name(m, "compiled function")
    return f"{where}: {plain_reason(reason)}" if reason else f"{where}: first compile of the frame"


def run_threads(serve: ServeContext, eager: Any, compiled: Any, n: int = THREADS) -> dict:
    """The first SAMPLE requests served by `n` threads; outputs against eager's and one thread's."""
    ref: dict[int, Any] = {}
    sample = []
    for r in itertools.islice(serve.requests(), SAMPLE):  # the requests eager serves
        try:
            ref[r.index] = serve.call(eager, r.args)
        except Exception:  # noqa: BLE001 - the model rejects it: the replay's error line names it
            continue
        sample.append(r)
    serve.sync()
    t0 = time.perf_counter()
    one = {r.index: serve.call(compiled, r.args) for r in sample}
    serve.sync()
    rps_one = len(sample) / (time.perf_counter() - t0)
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for r in sample:
        todo.put(r)
    results: dict[int, Any] = {}
    errors: list[str] = []
    mark = dynamo_state.Mark()
    stop = threading.Event()  # set when the part's time runs out: no thread takes another request

    def worker(k: int) -> None:
        while not stop.is_set():
            try:
                r = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[r.index] = serve.call(compiled, r.args)
            except Exception as exc:  # noqa: BLE001 - what failed is the finding
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                errors.append(
                    f"thread {k}, request {r.index} {r.shapes}: {type(exc).__name__}: {first}"
                )

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, serve.deadline - time.monotonic()))
    # a thread still in a call when the time ran out finishes that request and takes no other:
    # none keeps serving in the background while the next part measures
    stop.set()
    serve.sync()
    wall = time.perf_counter() - t0
    made = mark.since()  # compiles inside the threaded run
    hung = sum(t.is_alive() for t in threads)
    served = sorted(results)
    equal = [_passes(ref[i], results[i]) for i in served]
    same = [not _differs(one[i], results[i]) for i in served]
    error = (
        errors[0]
        if errors
        else (f"{hung} thread(s) still running when the part's time ran out" if hung else None)
    )
    return {
        "n": n,
        "requests": len(sample),
        "served": len(served),
        "ok": not errors and not hung and len(served) == len(sample),
        "outputs_equal": all(equal) if equal else None,
        "mismatches": [i for i, ok in zip(served, equal) if not ok][:20],
        "same_as_one_thread": all(same) if same else None,
        "rps_one": rps_one,
        "rps_n": len(served) / wall if wall > 0 and served else None,
        "compiles": len(made),
        "compile_reasons": [reason_of(m) for m in made][:5],
        "error": error,
        "errors": errors[:10],
        "method": f"the first {len(sample)} requests after the warm-up: eager in one thread (the "
        f"reference outputs), compiled in one thread (requests/s of one thread), then compiled by "
        f"{n} threads of one process taking requests from one queue (requests/s of {n}); each "
        "threaded output against eager's by the numerics rule and against one thread's bit for bit",
    }
