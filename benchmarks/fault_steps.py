"""Page faults per compiled call (and ms) as the analysis child's steps are applied, one after another, in one process.

Minor page faults are deterministic where timings are noisy: a compiled conv net whose wrapper copies every
conv weight to channels-last each call allocates tens of MB per call, and how many of those pages fault
depends on glibc malloc's state (dynamic mmap/trim thresholds, heap layout) left by earlier work.
Usage: python benchmarks/fault_steps.py benchmarks/resnet18.py:build
"""

from __future__ import annotations

import copy
import ctypes
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def mallinfo() -> dict:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    m = libc.mallinfo2()
    return {
        "heap_MB": round(m.arena / 2**20, 1),
        "mmapped_MB": round(m.hblkhd / 2**20, 1),
        "free_MB": round(m.fordblks / 2**20, 1),
        "top_free_MB": round(m.keepcost / 2**20, 1),
    }


def probe(tag: str, fns: dict, n: int = 8) -> dict:
    import torch

    row: dict = {"step": tag}
    with torch.no_grad():
        for name, fn in fns.items():
            fn()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            row[name] = {
                "faults": round((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n),
                "ms": round(statistics.median(ts) * 1e3, 2),
            }
    row["malloc"] = mallinfo()
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    import torch

    torch.set_num_threads(1)
    from tcdoctor.probes import dynamo_state, first_call, graph_breaks
    from tcdoctor.probes.rss import RssPeak
    from tcdoctor.target import load as tgt

    workload, _ = tgt.load_with_rebuild(sys.argv[1])
    model, args = workload.model, tuple(workload.call_args.args)
    steps = (
        sys.argv[2].split(",")
        if len(sys.argv) > 2
        else ["copies", "explain", "compile_copy", "rss"]
    )
    keep = []
    cm = torch.compile(model)
    with torch.no_grad():
        cm(*args)
    fns = {"eager": lambda: model(*args), "compiled": lambda: cm(*args)}
    probe("minimal (fresh process, first call done)", fns)
    for s in steps:
        if s == "copies":
            keep += [copy.deepcopy(model) for _ in range(4)]
        elif s == "explain":
            with torch.no_grad():
                graph_breaks.probe(copy.deepcopy(model), workload.call_args)
        elif (
            s == "compile_copy"
        ):  # tcdoctor: dynamo fresh, first call on copy A (RssPeak), timed copy B
            dynamo_state.fresh()
            a = torch.compile(copy.deepcopy(model))
            with torch.no_grad():
                first_call.first_call(lambda a=a: a(*args), "m", lambda: None)
            b = torch.compile(copy.deepcopy(model))
            keep += [a, b]
            fns["compiled_copy_b"] = lambda b=b: b(*args)
        elif s == "rss":
            with RssPeak(), torch.no_grad():
                cm(*args)
        elif s == "gc":
            import gc

            gc.collect()
        probe(f"after {s}", fns)


if __name__ == "__main__":
    main()
