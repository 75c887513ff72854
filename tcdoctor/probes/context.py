"""What a probe's phase function is given: the typed context (`PhaseContext`) every `phase_NAME(ctx)`
takes, instead of an untyped object with attributes found by reading the runner.

`run/runner.py`'s `PhaseRunner` is the one implementation (the driver, one per child process);
the probes sit below run/ and experiments/ in the layers, so they see it through this Protocol,
structurally: nothing here imports the runner, and a test's stand-in satisfies it by having the
same members. `tests/test_adding_a_probe.py` checks that every `ctx.NAME` a probe reads is declared
here and that the runner has it.

Pitfalls: the state fields are filled as the phases run (`compiled` after the compile phase,
`eager_out` after the eager reference call, ...); a phase that needs one checks it (`need_compiled()`
raises Skip) rather than assuming an order its declaration does not give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    import torch

    from ..options import Options
    from ..target.pristine import Pristine
    from ..target.workload import Workload


class Subject(Protocol):
    """A fresh copy of the workload and the callable that runs it (a model or a training step);
    `experiments/training.Subject` is the implementation."""

    workload: Workload
    fn: Any


class PhaseContext(Protocol):
    """What the phases of one process share (the runner's state) and the helpers they call."""

    # -- given ---------------------------------------------------------------
    workload: Workload  # the user's workload (the original: tcdoctor calls copies)
    options: Options  # the analysis's options (backend, mode, budgets)
    device: torch.device  # where the model's parameters and inputs live
    sync: Callable[[], None]  # waits for the device (a no-op on CPU)
    label: str  # "Model.forward" or "train step"
    pristine: Pristine | None  # the snapshot fresh copies come from (None: timing-only process)
    owns_original: bool  # the child ran build(): its original object may be called
    before_compile: Callable[[], Any] | None  # the target's hook before the first compile
    # -- filled as the phases run ---------------------------------------------
    results: dict[str, dict]  # earlier phases' result dicts, by phase name
    per_call_s: float | None  # one eager call's wall time (sizes the timing budget)
    eager_subject: Subject | None  # the copy the eager reference call ran on
    eager_out: list | None  # the eager call's output snapshot (numerics compares)
    compiled_out: list | None  # the compiled call's output snapshot
    compiled: Any  # the compiled callable timing, memory and profile use
    sequence: tuple[Subject, Any] | None  # the copy that made the first compiled call, compiled
    first_call_metrics: list | None  # CompilationMetrics of the first compiled call
    entries_after_first_call: int  # Dynamo cache entries right after the first call
    dynamo_reset: bool  # a phase reset Dynamo after the first call
    timing_process: dict  # a timing-only process: why it runs, its environment
    # the compiled copy's held-memory window (probes/memory.Held), opened before its first call
    held: Any
    eager_first_call_peak: (
        dict | None
    )  # the eager side's first call's peak (memory.first_call_peak)

    def fresh(self) -> Subject:
        """A fresh copy of the workload from the pristine snapshot."""
        ...

    def call(self, fn: Any, call_args: Any = None) -> Any:
        """One call of `fn` on the workload's inputs (or `call_args`)."""
        ...

    def eager_fn(self) -> Any:
        """One eager call of the eager reference copy."""
        ...

    def compiled_fn(self) -> Any:
        """One call of the compiled callable."""
        ...

    def check_copies(self) -> None:
        """Once per process: does a copy's first call do what the original's does?"""
        ...

    def take_checked(self) -> tuple[Subject, Any, float] | None:
        """The fidelity check's copy, with its output and wall time (once)."""
        ...

    def torch_compile(self, subject: Subject) -> Any:
        """`torch.compile` of what the subject calls, with the analysis's settings."""
        ...

    def original(self) -> Subject:
        """The object build() returned, as the user's script calls it."""
        ...

    def need_compiled(self) -> None:
        """Raise Skip when the compiled callable is not available."""
        ...

    def pristine_fn(self) -> Any:
        """The called object on the pristine workload (read, never called)."""
        ...

    def pristine_inputs(self) -> Any:
        """The call arguments as build() returned them (read, never called with)."""
        ...

    def call_and_snapshot(self, subject: Subject, fn: Any = None) -> list:
        """One call on the subject's own inputs: its output, the subject's state and inputs after it."""
        ...

    def timing_question(self) -> Any:
        """What the timing phase answers (experiments.pair.question)."""
        ...

    def automatic_row(self, subject: Subject, compiled: Any, data: dict) -> dict | None:
        """The 'automatic' shape row from the recompile sequence just run, or None."""
        ...
