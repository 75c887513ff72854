"""CUDA graphs as PyTorch reports them: how many compiled graphs were captured, how many PyTorch
skipped, and its reason for each skip in its own words, with the fix that matches the reason.

Method. Inductor decides per compiled graph (a forward or a backward graph) whether to run it
under CUDA graphs (mode="reduce-overhead", "max-autotune"). Each skip bumps the counter
`inductor.cudagraph_skips` and, for a graph on CUDA, logs "skipping cudagraphs due to …" at WARNING
on the `cudagraphs` artifact logger (`torch._inductor.cudagraph_utils.__cudagraphs`, via
`log_cudagraph_skip_and_bump_counter`), the same text CompilationMetrics keeps as
`cudagraph_skip_reason`. `capture()` attaches a handler to that logger for the compile and the
warm-up calls (some skips, a mutated input among them, are found at the first run) and reads the
records. On the CPU PyTorch bumps the counter without logging: the reason is what its own check
returns, `cudagraph_utils.check_lowering_disable_cudagraph` ("skipping cudagraphs due to cpu device
(arg0_1)"), read by wrapping that function while the capture is open (it runs once per graph Inductor
lowers, inside the compile, never in a compiled or timed call; a graph loaded from the FX graph
cache is not lowered again, so a warm process has the count without the reason).

Graphs: the FX graphs Inductor produced in the window, `fxgraph_cache_miss + fxgraph_cache_hit +
fxgraph_cache_bypass`. Captured: the graphs Inductor handed to CUDA graphs, counted where it does
(`compile_fx.cudagraphify`, wrapped while the capture is open, as the check is; it records at the
graph's first run). Not graphs − skips: a backward graph whose forward was skipped is neither
captured nor counted as a skip (on the CPU a training step read "1 of 3 captured, 2 skipped").

Pitfalls: a reason is PyTorch's text, never a template: where none was read, the report says
"reason not logged". The fix is chosen by the reason's words (`FIXES`); an unknown reason gets
PyTorch's text and no fix.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
from collections import Counter
from typing import Any, Iterator

from . import dynamo_state

LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"
MODES = ("reduce-overhead", "max-autotune")  # the modes that ask for CUDA graphs

# (a pattern in PyTorch's reason, the fix the user can make), first match wins
FIXES: tuple[tuple[str, str], ...] = (
    (
        r"mutated inputs",
        "an input is changed in place inside the compiled region: clone it before the call "
        "(`x = x.clone()` outside the compiled function) or move the in-place update out of it",
    ),
    (
        r"cpu device",
        "a tensor in the graph is on the CPU: move every input, parameter and buffer to the GPU "
        "(`.to('cuda')`), or read the CPU value outside the compiled region; on a CPU-only model "
        "CUDA graphs do not apply and mode='reduce-overhead' gains nothing",
    ),
    (
        r"multiple devices",
        "the graph spans several devices: keep one compiled region per device",
    ),
    (
        r"symbolic shapes|dynamic",
        "the graph has dynamic shapes: pad inputs to a few fixed sizes, or compile with "
        "dynamic=False (one CUDA graph per shape)",
    ),
    (
        r"incompatible op",
        "an operator CUDA graphs cannot capture is in the graph: compile around it "
        "(`torch.compiler.disable` on the code that calls it)",
    ),
    (
        r"caching allocator",
        "the caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING): turn it back on",
    ),
)
NO_REASON = "reason not logged (PyTorch counted the skip without a message here)"
# On the CPU every graph is skipped whatever the words: PyTorch 2.13's check reads a CPU graph's
# devices as "multiple devices: " (an empty list: no CUDA device in it)
CPU_FIX = (
    "the model runs on the CPU: CUDA graphs capture CUDA work only, so a mode that asks for them "
    "(reduce-overhead, max-autotune) captures nothing here; on a GPU the same graphs are captured "
    "unless another reason stands"
)


def fix_for(reason: str, device_type: str = "cuda") -> str | None:
    """The fix that matches PyTorch's reason, or None for a reason FIXES does not know; on the
    CPU, CPU_FIX."""
    if device_type == "cpu":
        return CPU_FIX
    for pattern, fix in FIXES:
        if re.search(pattern, reason, re.IGNORECASE):
            return fix
    return None


def _first_line(text: str) -> str:
    """PyTorch's reason without its stack trace ("… Found from : \\n File …")."""
    head = text.strip().splitlines()[0] if text.strip() else text
    return head.split(". Found from")[0].strip()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad record must not break the analysis
            return
        if "cudagraph" in msg:
            self.messages.append(msg)


class Capture:
    """What `capture()` read: PyTorch's skip messages (logged, or returned by its CPU check), and
    how many graphs Inductor handed to CUDA graphs (None: its function was not found)."""

    def __init__(self) -> None:
        self.logged: list[str] = []
        self.checked: list[str] = []
        self.captured: int | None = None

    @property
    def reasons(self) -> list[str]:
        return self.logged or self.checked


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Read PyTorch's CUDA-graph skip reasons while the block runs (the module docstring)."""
    out = Capture()
    handler = _Records()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    restores = [_wrap_check(out), _wrap_cudagraphify(out)]
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        for restore in restores:
            restore()
        out.logged = list(handler.messages)


def _wrap(module_name: str, name: str, wrapper) -> Any:
    """Replace `module.name` by `wrapper(original)` until the returned restore() is called; a
    no-op restore where PyTorch's private module or function is gone (the figure stays unread)."""
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - private module moved
        return None
    original = getattr(module, name, None)
    if original is None:
        return None
    setattr(module, name, wrapper(original))

    def restore() -> None:
        setattr(module, name, original)

    return restore


def _wrap_check(out: Capture):
    """Wrap PyTorch's own lowering check so its returned reason is kept (CPU: never logged)."""

    def wrapper(original):
        def checked(*args, **kwargs):
            reason = original(*args, **kwargs)
            if reason:
                out.checked.append(str(reason))
            return reason

        return checked

    return (
        _wrap("torch._inductor.cudagraph_utils", "check_lowering_disable_cudagraph", wrapper)
        or _noop
    )


def _wrap_cudagraphify(out: Capture):
    """Count the graphs Inductor hands to CUDA graphs (compile_fx.cudagraphify, imported by name
    where it is called, so the module attribute is what runs)."""

    def wrapper(original):
        out.captured = 0

        def counted(*args, **kwargs):
            out.captured = (out.captured or 0) + 1
            return original(*args, **kwargs)

        return counted

    return _wrap("torch._inductor.compile_fx", "cudagraphify", wrapper) or _noop


def _noop() -> None:
    pass


def graphs_compiled() -> int:
    """FX graphs Inductor produced since the counters were cleared (cache misses, hits, bypasses)."""
    return sum(
        dynamo_state.counter("inductor", k)
        for k in ("fxgraph_cache_miss", "fxgraph_cache_hit", "fxgraph_cache_bypass")
    )


def summary(
    mode: str | None, cap: Capture, metrics_reasons: list[str] = (), device_type: str = "cuda"
) -> dict | None:
    """The report's `cudagraphs` figure for a compile in `mode` on `device_type`, from the counters
    (cleared at the compile's start) and what `capture` read; None for a mode that asks for no
    CUDA graphs."""
    if not mode or not mode.startswith(MODES) or "no-cudagraphs" in mode:
        return None
    skipped = dynamo_state.counter("inductor", "cudagraph_skips")
    graphs = graphs_compiled()
    captured = 0 if device_type == "cpu" else cap.captured
    texts = cap.reasons or [r for r in metrics_reasons if r]
    counts = Counter(_first_line(t) for t in texts)
    reasons = [
        {"reason": reason, "count": n, "fix": fix_for(reason, device_type)}
        for reason, n in counts.most_common()
    ]
    if skipped and not reasons:
        reasons = [{"reason": NO_REASON, "count": skipped, "fix": fix_for("", device_type)}]
    source = (
        "PyTorch's log (cudagraphs artifact logger)"
        if cap.logged
        else "PyTorch's own check, cudagraph_utils.check_lowering_disable_cudagraph (the CPU: "
        "counted, not logged)"
        if cap.checked
        else "CompilationMetrics.cudagraph_skip_reason"
        if texts
        else "none read"
    )
    return {
        "graphs": graphs,
        "skipped": skipped,
        "captured": captured,
        "reasons": reasons,
        "method": (
            "graphs: Inductor's FX graphs (fxgraph cache misses + hits + bypasses); captured: the "
            "graphs Inductor handed to CUDA graphs (compile_fx.cudagraphify calls; none on the "
            "CPU); skipped: counter inductor.cudagraph_skips (a backward graph whose forward was "
            f"skipped is neither); reasons: {source}, in PyTorch's words"
        ),
    }


def metrics_reasons(metrics: list) -> list[str]:
    """CompilationMetrics' `cudagraph_skip_reason` of each entry that has one."""
    return [str(r) for m in metrics if (r := getattr(m, "cudagraph_skip_reason", None))]
