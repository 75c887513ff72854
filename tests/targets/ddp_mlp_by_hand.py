"""ddp_mlp.py's training step compiled by hand, one call, under torchrun: prints one JSON line per
rank with PyTorch's own counters for that call (and, after a reset, explain's figures).

    python -m torch.distributed.run --standalone --nproc-per-node 2 ddp_mlp_by_hand.py [BACKEND]
"""

import json
import logging
import os
import sys

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
dist.init_process_group("gloo")
import ddp_mlp  # noqa: E402

backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
created = []


class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "created" in msg and "buckets" in msg:
            created.append(int(msg.split("created")[1].split()[0]))


torch._logging.set_logs(ddp=logging.INFO)
logging.getLogger("torch._dynamo.backends.distributed").addHandler(Grab())

model, opt, x, y = ddp_mlp.parts()


def step(x):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


counters.clear()
torch.compile(step, backend=backend)(x)
out = {
    "rank": dist.get_rank(),
    "graphs": counters["stats"]["unique_graphs"],
    "graph_breaks": sum(counters["graph_break"].values()),
    "ddp_buckets": sum(created),
}
torch._dynamo.reset()
counters.clear()
model, opt, x, y = ddp_mlp.parts()
with torch._dynamo.config.patch(optimize_ddp=False):
    e = torch._dynamo.explain(step)(x)
out.update(explain_graphs=e.graph_count, explain_graph_breaks=e.graph_break_count)
# one write per line: the ranks share the pipe
sys.stdout.write("COUNTED " + json.dumps(out) + "\n")
sys.stdout.flush()
dist.destroy_process_group()
