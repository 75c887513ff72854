"""Generation replayed by hand (issue 60): the prompts of samples/generate.py served by
`model.generate` with a streamer clock, in this process only, with no tcdoctor code, for the
10%-agreement check against tcdoctor's generation section.

    python benchmarks/generate_by_hand.py --side eager
    python benchmarks/generate_by_hand.py --side compiled --backend eager

One side per process (as tcdoctor runs them). The model and prompts are built as
samples/generate.py builds them (the same config, seed and lengths, written out here so that this
script imports nothing of tcdoctor). `--larger`: a GPT-2-small-sized model (124M parameters, random
weights from GPT2Config: nothing is downloaded). Prints one JSON line: TTFT, ITL, TPOT at
p50/p90/p99 (nearest rank), tokens/s over the replay, the compiles (torch._dynamo's own metrics).
"""

import argparse
import json
import math
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
    return xs[max(0, math.ceil(q * len(xs)) - 1)] if xs else None


def replay(model, ps, new):
    ttft, itl, tpot, tokens, total = [], [], [], 0, 0.0
    for p in ps:
        ids = p.unsqueeze(0)
        clock = Clock()
        t0 = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, attention_mask=torch.ones_like(ids), streamer=clock,
                           max_new_tokens=new, min_new_tokens=new, do_sample=False)  # fmt: skip
        end = time.perf_counter()
        t = [x - t0 for x in clock.times]
        ttft.append(t[0])
        itl += [b - a for a, b in zip(t, t[1:])]
        tpot.append((t[-1] - t[0]) / (len(t) - 1))
        tokens += len(t)
        total += end - t0
    pct = {q: q / 100 for q in (50, 90, 99)}
    out = {f"ttft_p{k}_ms": nearest(ttft, v) * 1e3 for k, v in pct.items()}
    out |= {f"itl_p{k}_ms": nearest(itl, v) * 1e3 for k, v in pct.items()}
    out |= {f"tpot_p{k}_ms": nearest(tpot, v) * 1e3 for k, v in pct.items()}
    out["tokens_per_s"] = tokens / total
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", choices=("eager", "compiled"), required=True)
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
    result = {"side": a.side}
    if a.side == "eager":
        result["eager"] = replay(model, ps, a.new)
    else:
        model.forward = torch.compile(model.forward, backend=a.backend)
        result["compiled"] = replay(model, ps, a.new)
        import torch._dynamo.utils as du

        made = [m for m in du.get_compilation_metrics() if not getattr(m, "is_runtime", False)]
        result["compiles"] = len(made)
        result["steady"] = replay(model, ps, a.new)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
