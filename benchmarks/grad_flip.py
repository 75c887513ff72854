"""What entering no_grad per call costs against holding it over a loop, on HF GPT-2 (issue 13).

Four callables in one process, rotated every round (order reversed every other pass, as position in
the rotation moves a median by a few percent here): compiled and eager GPT-2, each either under one
no_grad held across a batch of calls or with no_grad entered (grad mode flipped) on every call.
Prints the median per-call time of each in µs. This is why timing.measure holds no_grad per sample.

Usage: python benchmarks/grad_flip.py [BACKEND] [SECONDS]   (default: inductor 8)
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "targets", "real"))


def main() -> None:
    from gpt2_lm import build

    backend = sys.argv[1] if len(sys.argv) > 1 else "inductor"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    torch.set_num_threads(1)
    model, _, kw = build()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for _ in range(5):
            compiled(**kw)
            model(**kw)

    def per_call(m, k: int) -> float:
        t = time.perf_counter()
        for _ in range(k):
            with torch.no_grad():
                m(**kw)
        return (time.perf_counter() - t) / k

    def held(m, k: int) -> float:
        t = time.perf_counter()
        with torch.no_grad():
            for _ in range(k):
                m(**kw)
        return (time.perf_counter() - t) / k

    jobs = [
        ("compiled_held", held, compiled, 6),
        ("compiled_per_call", per_call, compiled, 6),
        ("eager_held", held, model, 3),
        ("eager_per_call", per_call, model, 3),
    ]
    res: dict[str, list[float]] = {name: [] for name, *_ in jobs}
    end, r = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        order = jobs[r % 4 :] + jobs[: r % 4]
        if (r // 4) % 2:
            order = order[::-1]
        for name, fn, m, k in order:
            res[name].append(fn(m, k))
        r += 1
    print(backend, {n: round(statistics.median(v) * 1e6, 1) for n, v in res.items()})


if __name__ == "__main__":
    main()
