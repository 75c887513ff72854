"""The 'torch.compile Benchmarked' article's measurements by hand, one mode per fresh process: the
first step's time and memory, then training ms/iter with CUDA events (the article's own method: 20
back-to-back steps a block, 5 blocks, the median block). No tcdoctor measurement code: tcdoctor is
imported only for its TrainStep data holder (through the target).

Usage: python benchmarked_by_hand.py MODE   (eager | default | reduce-overhead | max-autotune...)
Prints one JSON line."""

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_train_amp as case  # noqa: E402

mode = sys.argv[1]
N_ITER, BLOCKS = 20, 5
w = case.build()
model, opt, kw = w.model, w.optimizer, w.kwargs


def step() -> torch.Tensor:
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(**kw).loss
    loss.backward()
    opt.step()
    return loss.detach()


fn = step if mode == "eager" else torch.compile(step, mode=None if mode == "default" else mode)
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
base = torch.cuda.memory_allocated()
t = time.perf_counter()
fn()
torch.cuda.synchronize()
first = time.perf_counter() - t
first_mem = (torch.cuda.max_memory_allocated() - base) / 2**20
for _ in range(5):
    fn()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(BLOCKS):
    start.record()
    for _ in range(N_ITER):
        fn()
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end) / N_ITER)
times.sort()
held_mib = torch.cuda.memory_reserved() / 2**20
print(
    json.dumps(
        {
            "mode": mode,
            "initial_step_s": round(first, 3),
            "initial_step_mib": round(first_mem, 1),
            "train_ms_per_iter_median": round(times[BLOCKS // 2], 3),
            "train_ms_all": [round(x, 3) for x in times],
            "reserved_after_mib": round(held_mib, 1),
        }
    )
)
