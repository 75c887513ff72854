"""Analysis options, one object shared by the CLI, the Python API and the child process."""

from __future__ import annotations

import dataclasses

DEFAULT_THREADS = (
    1  # one intra-op thread: stable timings on shared machines; recorded in the report
)


@dataclasses.dataclass
class Options:
    backend: str = "inductor"
    mode: str | None = None
    threads: int = DEFAULT_THREADS
    timeout_s: float = 600.0
    budget_s: float = 5.0
    profile_budget_s: float = (
        1.0  # the profiler phase, start-up included (guard cost, top operators)
    )
    warm: bool = True
    trace_dir: str | None = None
    modes: list = dataclasses.field(default_factory=lambda: ["default"])
    submodules: bool | None = None  # None: automatically when the whole model breaks a lot
    depth: int = 1
    dynamic: bool | None = None  # None: compare shape strategies when variants change shapes
    training_ways: bool = (
        True  # a TrainStep: also time compiling the model alone, the optimizer alone
    )
    fallback_random: bool = (
        False  # random models: compile again with fallback_random to compare numerics
    )
    fixes: bool = (
        True  # try the fixes that need no source edit, and locate a loss by backend (tried.py)
    )
    fix_budget_s: float | None = None  # None: 4 × the cold first call, at least 20 s
    # Distributed runs (tcdoctor/run/distributed.py): one analysis process per rank under torch.distributed.run.
    nproc: int = 1  # ranks on this node; > 1 (or nnodes > 1) makes a distributed run
    nnodes: int = 1
    node_rank: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_backend: str | None = None  # torchrun's default (static) unless given
    dist_backend: str | None = None  # None: nccl when CUDA is available, else gloo
    pg_timeout_s: float | None = (
        None  # the process group timeout your job uses; None: torch's default
    )
    torch_trace: str | None = (
        None  # TORCH_TRACE folder for PyTorch's structured compile logs (tlparse)
    )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Options":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
