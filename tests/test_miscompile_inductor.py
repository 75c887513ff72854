"""Issue 64 on a real miscompile, with Inductor (one test: four Inductor compiles, about a minute).

samples/neural_ode.py: a neural ODE's adaptive Dormand-Prince step takes Python floats `t` and
`dt`. On torch 2.13 CPU its fourth call runs graph 1/3 of `step` (both floats dynamic after three
recompiles), whose compiled state differs from eager's by about 1.5e-2 while eager is within 1e-7
of float64 (aot_eager is exact on the same calls; with TORCHINDUCTOR_FX_GRAPH_CACHE=0 the
difference is gone, see the note of branch `repro`). The recorder must name that graph and call."""

import time

import pytest
import torch
from conftest import ROOT

from tcdoctor.probes import diverge

TARGET = f"{ROOT}/samples/neural_ode.py:build"


@pytest.mark.inductor
def test_the_neural_ode_step_graph_and_call_that_inductor_gets_wrong_are_named(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    rec, _ = diverge.record_run(TARGET, "inductor", None, time.monotonic() + 600)
    f = rec.found
    assert f is not None, rec.stopped
    assert (f.compile_id, f.call, f.call_overall) == ("1/3", 1, 4)
    assert set(f.scalars) == {"L['t']", "L['dt']"} and f.shapes["L['y']"] == [8, 16]
    (out,) = [o for o in f.outputs if o.path == "output 0"]  # the state y5
    # far beyond rounding: compiled is off fp64 by orders of magnitude more than eager
    assert out.max_abs_err > 1e-3
    assert out.compiled_rmse_vs_fp64 > 1000 * out.eager_rmse_vs_fp64
    site = diverge.graph_site("1/3")
    assert site["function"] == "step" and site["file"].endswith("neural_ode.py")
    # the function's three earlier calls (graphs 1/0, 1/1, 1/2) agreed and are replayed by the script
    assert [cid for cid, _ in f.frame_before] == ["1/0", "1/1", "1/2"]
    assert diverge.earlier_calls(rec.graphs["1/3"], f)[0] == {
        rec.graphs["1/3"].sources.index("L['t']"): 0.0,
        rec.graphs["1/3"].sources.index("L['dt']"): 0.5,
    }
