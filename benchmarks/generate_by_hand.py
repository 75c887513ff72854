"""Generation replayed by hand (issue 60): the prompts of samples/generate.py served by
`model.generate` with a streamer clock, in this process only, with no tcdoctor code, for the
10%-agreement check against tcdoctor's generation section.

    python benchmarks/generate_by_hand.py --paired                 # as the report's paired row
    python benchmarks/generate_by_hand.py --side eager
    python benchmarks/generate_by_hand.py --side compiled --backend eager

`--paired` does what the report's paired replay does (tcdoctor's compiled process), written out
plainly: in ONE process, one model object, compiled as the sample's user compiles it
(`model.forward = torch.compile(model.forward, backend=...)`); the compiled side warmed as the
report warms it (one cold pass over the prompts, compiled); then rounds of the same prompts in
the same order, each request served eager (the model's own forward set back by attribute
assignment, no second compile) and compiled back to back, eager first on the 1st, 3rd, ... pair,
until `--pairs` pairs (whole rounds). A phase of the shared host (a neighbour's load, ~0.3 s to
seconds) then falls on both halves of a pair. Prints one JSON line: per side TTFT/ITL/TPOT at
p50/p90/p99 (nearest rank) and tokens/s from the pairs, the per-request ratio median (compiled
time / eager time, each request's two halves), pairs, rounds and tokens counted.

`--side`: one side per process (eager; or compiled: cold, then steady). Two processes run at two
moments of the host, so on a loaded machine they disagree with each other (gen4's note: 2-3x).

Each generate call is the report's: greedy, exactly `--new` new tokens, `attention_mask` of ones,
`return_dict_in_generate=True, output_logits=True` (the report keeps the logits for its
tokens-equal check; one clone of the last position's logits per step, inside the clock), the
eager side `disable_compile=True` (transformers' own auto-compile, CUDA with a static cache only).
The model and prompts are built as samples/generate.py builds them (the same config, seed and
lengths, written out here so that this script imports nothing of tcdoctor). `--larger`: a
GPT-2-small-sized model (124M parameters, random weights from GPT2Config: nothing is downloaded).
"""

import argparse
import json
import math
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from transformers.generation.streamers import BaseStreamer

LENGTHS = (8, 24, 16, 40, 12, 32, 20, 48)


def tiny_llama():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    )  # fmt: skip
    return LlamaForCausalLM(config).eval(), 512


def gpt2_small():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config()).eval(), 50257


def prompts(vocab, lengths=LENGTHS, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=g) for n in lengths]


class Clock(BaseStreamer):
    def __init__(self):
        self.times, self.seen = [], False

    def put(self, value):
        if not self.seen:  # the prompt
            self.seen = True
            return
        self.times.append(time.perf_counter())

    def end(self):
        pass


def nearest(xs, q):
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs) - 1e-9) - 1)] if xs else None


def serve(model, p, new, **extra):
    """One request: (token times from its start, its total time), seconds."""
    ids = p.unsqueeze(0)
    clock = Clock()
    t0 = time.perf_counter()
    with torch.no_grad():
        model.generate(ids, attention_mask=torch.ones_like(ids), streamer=clock,
                       max_new_tokens=new, min_new_tokens=new, do_sample=False,
                       return_dict_in_generate=True, output_logits=True, **extra)  # fmt: skip
    end = time.perf_counter()
    return [x - t0 for x in clock.times], end - t0


def figures(rows):
    """TTFT/ITL/TPOT percentiles (ms) and tokens/s (all new tokens / the sum of request times)."""
    ttft = [t[0] for t, _ in rows]
    itl = [b - a for t, _ in rows for a, b in zip(t, t[1:])]
    tpot = [(t[-1] - t[0]) / (len(t) - 1) for t, _ in rows if len(t) > 1]
    pct = {q: q / 100 for q in (50, 90, 99)}
    out = {f"ttft_p{k}_ms": nearest(ttft, v) * 1e3 for k, v in pct.items()}
    out |= {f"itl_p{k}_ms": nearest(itl, v) * 1e3 for k, v in pct.items()}
    out |= {f"tpot_p{k}_ms": nearest(tpot, v) * 1e3 for k, v in pct.items()}
    out["tokens"] = sum(len(t) for t, _ in rows)
    out["tokens_per_s"] = out["tokens"] / sum(total for _, total in rows)
    return out


def replay(model, ps, new):
    return figures([serve(model, p, new) for p in ps])


def compiles():
    import torch._dynamo.utils as du

    made = [m for m in du.get_compilation_metrics() if not getattr(m, "is_runtime", False)]
    return len(made)


def paired(model, ps, new, backend, pairs):
    """The report's paired replay, by hand (see the module's docstring)."""
    own = model.forward
    model.forward = torch.compile(model.forward, backend=backend)
    compiled_forward = model.forward
    t0 = time.perf_counter()
    cold = [serve(model, p, new) for p in ps]  # the warm-up: one pass, its compiles
    warm_s = time.perf_counter() - t0
    rows = {"eager": [], "compiled": []}
    k = rounds = 0
    began = time.time()  # wall clock, to line the pairs up with the host's load log
    while k < pairs:
        for p in ps:  # a whole round: the same prompts in the same order
            for side in ("eager", "compiled") if k % 2 == 0 else ("compiled", "eager"):
                model.forward = own if side == "eager" else compiled_forward
                extra = {"disable_compile": True} if side == "eager" else {}
                rows[side].append(serve(model, p, new, **extra))
            k += 1
        rounds += 1
    model.forward = compiled_forward
    ratios = [c[1] / e[1] for c, e in zip(rows["compiled"], rows["eager"])]
    return {
        "pairs": k, "rounds": rounds, "round_size": len(ps), "warm_s": warm_s,
        "compiles": compiles(), "cold": figures(cold),
        "eager": figures(rows["eager"]), "compiled": figures(rows["compiled"]),
        "ratio_median": statistics.median(ratios),
        "pairs_wall": [began, time.time()],
        "per_round": [  # each round's figures alone: how far the host moves them in seconds
            {side: figures(rows[side][r * len(ps) : (r + 1) * len(ps)]) for side in rows}
            for r in range(rounds)
        ],
    }  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--side", choices=("eager", "compiled"))
    how.add_argument("--paired", action="store_true")
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--new", type=int, default=12)
    ap.add_argument("--larger", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model, vocab = gpt2_small() if a.larger else tiny_llama()
    ps = prompts(vocab)
    with torch.no_grad():
        model(ps[0].unsqueeze(0))  # the runtime's lazy start, untimed, eager
    if a.paired:
        result = {"paired": paired(model, ps, a.new, a.backend, a.pairs)}
    elif a.side == "eager":
        result = {"side": a.side, "eager": replay(model, ps, a.new)}
    else:
        model.forward = torch.compile(model.forward, backend=a.backend)
        result = {"side": a.side, "compiled": replay(model, ps, a.new)}
        result["compiles"] = compiles()
        result["steady"] = replay(model, ps, a.new)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
