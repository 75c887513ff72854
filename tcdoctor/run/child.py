"""Child process entry: `python -m tcdoctor.run.child SPEC.json`.

Sets the inductor cache dir and thread count before torch compiles anything, arms
faulthandler so a hang or crash leaves the stack behind, then runs a Session.
"""
from __future__ import annotations

import faulthandler
import json
import os
import sys
import warnings


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = spec["cache_dir"]
    stacks = open(spec["stacks_path"], "w")  # noqa: SIM115 - must outlive this function for faulthandler
    faulthandler.enable(file=stacks, all_threads=False)
    if spec.get("dump_after_s"):
        faulthandler.dump_traceback_later(spec["dump_after_s"], exit=False, file=stacks)
    warnings.filterwarnings("ignore", message=".*NumPy.*")

    from ..errors import TcdoctorError
    from .options import Options
    from .stream import FileSink

    sink = FileSink(spec["events_path"])
    options = Options.from_dict(spec["options"])
    import torch

    torch.set_num_threads(options.threads)  # before any compile: a later change forces a recompile
    from .. import target
    from .session import COLD, WARM, Session

    sink({"event": "start", "phase": "load"})
    try:
        workload = target.load(spec["target"])
    except TcdoctorError as exc:
        sink({"event": "failed", "phase": "load", "error": {"message": exc.message, "where": None}, "fatal": True, "exit_code": exc.exit_code})
        return exc.exit_code
    sink({"event": "done", "phase": "load", "data": {"name": workload.name}})
    phases = WARM if spec["role"] == "warm" else COLD
    ok = Session(workload, options, sink, per_call_hint_s=spec.get("per_call_s")).run(phases)
    sink({"event": "end", "ok": ok})
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
