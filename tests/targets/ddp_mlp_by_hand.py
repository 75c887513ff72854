"""ddp_mlp.py's training step compiled by hand, one call per optimizer, under torchrun: prints one JSON
line per rank and optimizer (Adam, SGD) with PyTorch's own counters for that call (and, after a
reset, explain's figures).

The step is the closure PyTorch's recipes write (closure_step.recipe_step), the form tcdoctor
compiles. Beside it, `global_step`: the same step with no arguments over this module's globals, the
form that counts fewer graphs and breaks (Dynamo skips the frame that resumes after `zero_grad`,
which holds no tensor, so the forward and backward run uncompiled): its counts are printed too.

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
from closure_step import recipe_step  # noqa: E402

backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
loss_fn = torch.nn.functional.mse_loss
created = []


class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "created" in msg and "buckets" in msg:
            created.append(int(msg.split("created")[1].split()[0]))


torch._logging.set_logs(ddp=logging.INFO)
logging.getLogger("torch._dynamo.backends.distributed").addHandler(Grab())


def counted(fn, *args):
    """(graphs, breaks) PyTorch's counters read for one compiled call of fn, from a clean state."""
    torch._dynamo.reset()
    counters.clear()
    created.clear()
    torch.compile(fn, backend=backend)(*args)
    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


def global_step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


for name in ddp_mlp.OPTIMIZERS:
    model, opt, x, y = ddp_mlp.parts(name)
    graphs, breaks = counted(recipe_step(model, opt, loss_fn, y), x)
    out = {"rank": dist.get_rank(), "optimizer": name, "graphs": graphs, "graph_breaks": breaks}
    out["ddp_buckets"] = sum(created)
    model, opt, x, y = ddp_mlp.parts(name)
    out["globals_graphs"], out["globals_graph_breaks"] = counted(global_step)
    torch._dynamo.reset()
    model, opt, x, y = ddp_mlp.parts(name)
    with torch._dynamo.config.patch(optimize_ddp=False):
        e = torch._dynamo.explain(recipe_step(model, opt, loss_fn, y))(x)
    out.update(explain_graphs=e.graph_count, explain_graph_breaks=e.graph_break_count)
    # one write per line: the ranks share the pipe
    sys.stdout.write("COUNTED " + json.dumps(out) + "\n")
    sys.stdout.flush()
dist.destroy_process_group()
