"""Memory as the device holds it (issue 50 item 2): each side's first call's peak, steady call's
peak and what it holds after warm-up from before its first call; memory growth judged on held +
peak, so a mode holding a CUDA-graph pool is never called smaller than default.

CPU figures here (the CPU has no allocator statistics: the profiler's memory events and RSS), and
the CUDA bookkeeping (`memory.Held`) on canned allocator readings.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from conftest import sample

from tcdoctor.probes import memory, memory_graphs

MIB = 2**20


def test_held_is_the_growth_of_allocated_plus_private_pools_from_before_the_first_call(monkeypatch):
    """CUDA's bookkeeping on canned readings: allocated 100 → 130 MiB, CUDA graphs' pools' free
    bytes 0 → 50 MiB: the side holds 80 MiB, 50 of them pools; a second stop keeps the figure."""
    readings = iter([(100 * MIB, 0), (130 * MIB, 50 * MIB), (500 * MIB, 0)])
    held = memory.Held(torch.device("cuda", 0))
    monkeypatch.setattr(held, "_now", lambda: next(readings))
    held.start()
    held.stop()
    assert (held.bytes, held.pool_bytes) == (80 * MIB, 50 * MIB)
    held.stop()
    assert held.bytes == 80 * MIB
    # the CPU has no allocator statistics: nothing is read, nothing is made up
    cpu = memory.Held(torch.device("cpu")).start()
    cpu.stop()
    assert cpu.bytes is None and not cpu.started


def test_tensors_allocated_and_kept_are_held_temporaries_are_not():
    kept: list[torch.Tensor] = []

    def stateful() -> None:  # a cache that grows on the first call only, and a temporary
        if not kept:
            kept.append(torch.ones(256, 1024))  # 1 MiB
        (torch.ones(512, 1024) * 2).sum()  # 2 MiB, freed

    held = memory.held_by_tensors(memory.side_sequence(stateful))
    assert held is not None and MIB <= held < 1.5 * MIB
    assert memory.held_by_tensors(memory.side_sequence(lambda: torch.ones(512, 1024).sum())) < 4096
    # frees of what was allocated before the window are not counted against it
    assert memory.still_allocated([(1, 100, 7), (2, -100, 7), (3, -50, 9), (4, 30, 8)]) == 30


def test_a_mode_holding_a_pool_is_never_called_smaller_than_default():
    """The H100 case: reduce-overhead's steady peak 20 MiB against eager's 1.4 GiB, its pool held
    between calls. Judged on held + peak, it grows; on the peaks alone (a report without held
    memory) it would not."""
    pool_mode = {
        "eager_peak_bytes": 1400 * MIB,
        "compiled_peak_bytes": 20 * MIB,
        "eager_held_bytes": 600 * MIB,
        "compiled_held_bytes": 2600 * MIB,
        "compiled_pool_bytes": 1900 * MIB,
    }
    grows, growth = memory_graphs.grew(pool_mode)
    assert grows and growth == (2600 + 20 - 1400 - 600) * MIB
    out = memory_graphs.measure(lambda: None, pool_mode, torch.device("cuda", 0))
    assert out["grew"] and out["held"] and "holds between calls" in out["not_measured"]
    assert "CUDA graphs' pools 1.9 GiB" in out["not_measured"]
    peaks_only = {k: pool_mode[k] for k in ("eager_peak_bytes", "compiled_peak_bytes")}
    assert memory_graphs.grew(peaks_only) == (False, 0)
    from tcdoctor.report.sections import Memory

    m = Memory.from_dict(pool_mode)
    assert m.gate_ratio == pytest.approx(2620 / 2000)  # check --max-memory-ratio judges this
    assert Memory.from_dict(peaks_only).gate_ratio == pytest.approx(20 / 1400)


def test_a_training_step_holds_its_optimizer_state_and_a_recompile_is_never_added(cli):
    """Adam over six 256×256 layers (1.5 MiB of parameters): after warm-up eager holds at least
    its Adam state (two tensors per parameter, 3 MiB), measured on the CPU from the profiler's
    memory events. The compiled side is measured there on a fresh copy that must reuse the first
    call's cache entry; a training step's fresh copy would compile again (its closure's identity),
    which would add a cache entry later phases count, so that figure is "not measured (why)",
    never taken with a recompile inside it."""
    rc, out, err = cli(
        "analyze", f"{sample('train_adam.py')}:build", "--backend", "aot_eager", "--threads", "1",
        "--budget", "0.2", "--processes", "1", "--no-fixes", "--no-training-ways",
        "--no-submodules", "--quiet", "--json", "r.json", "--html", "",
    )  # fmt: skip
    assert rc == 0, out + err
    report = json.loads(open(os.path.join(cli.args[0], "r.json")).read())
    m = report["memory"]
    params = 6 * 256 * 256 * 4
    assert 2 * params * 0.95 <= m["eager_held_bytes"] < 8 * params, m
    for side in ("eager", "compiled"):
        assert m[f"{side}_first_call_peak_bytes"] >= 0
    assert m["held_method"].startswith("CPU: bytes of the tensors")
    assert m.get("compiled_held_bytes") is None and "would compile again" in m["held_not_measured"]
    rows = {r["name"]: r for r in report["strategies"]["training"]}
    assert rows["eager"]["held_bytes"] == m["eager_held_bytes"]
    assert rows["step"].get("held_bytes") is None
    assert rows["eager"]["first_call_s"] is not None  # eager's first call beside compiled's
    assert "held after warm-up eager / compiled" in out


def test_a_forward_with_a_cache_holds_it_on_both_sides(cli):
    """A forward whose module keeps a 1 MiB cache it fills on its first call (a fresh compiled copy
    reuses the first call's cache entry): each side holds it after warm-up, measured on the CPU."""
    target = os.path.join(cli.args[0], "cached.py")
    with open(target, "w") as f:
        f.write(
            "import torch\n"
            "class M(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = torch.nn.Linear(64, 64)\n"
            "        self.register_buffer('cache', torch.zeros(0), persistent=False)\n"
            "    def forward(self, x):\n"
            "        if self.cache.numel() == 0:\n"
            "            self.cache = torch.ones(256, 1024)\n"
            "        return self.lin(x) + self.cache[0, :64]\n"
            "def build():\n"
            "    torch.manual_seed(0)\n"
            "    return M(), (torch.randn(8, 64),)\n"
        )
    rc, out, err = cli(
        "analyze", "cached.py:build", "--backend", "aot_eager", "--threads", "1",
        "--budget", "0.2", "--processes", "1", "--no-fixes", "--no-submodules", "--quiet",
        "--json", "r.json", "--html", "",
    )  # fmt: skip
    assert rc == 0, out + err
    m = json.loads(open(os.path.join(cli.args[0], "r.json")).read())["memory"]
    for side in ("eager", "compiled"):
        assert MIB <= m[f"{side}_held_bytes"] < 1.5 * MIB, (side, m)
