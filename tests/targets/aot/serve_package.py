"""The fresh process of the AOT test: load the package the test built, serve the MLP's traffic
through it, compare with the saved eager outputs; print the result as JSON on the last line.

    python serve_package.py PACKAGE REFERENCE N SEED
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aot_mlp  # noqa: E402

from tcdoctor.probes import aot  # noqa: E402
from tcdoctor.target.traffic import Request, describe  # noqa: E402
from tcdoctor.target.workload import CallArgs  # noqa: E402

package, reference, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
calls = [CallArgs(r) for r in aot_mlp.requests(n, seed)]
requests = [Request(i, ca, describe(ca)) for i, ca in enumerate(calls)]
events: list = []
served = aot.load_and_serve(
    package,
    requests,
    deadline=time.monotonic() + 120,
    reference_path=reference,
    n_requests=n,
    sink=events.append,
)
served["events"] = [(e["event"], e["phase"]) for e in events]
print(json.dumps(served, default=str))
