"""The serving section's processes: the parent's stage (`stage`, called once by run/launcher.py's
analyze_target) and the child entry (`python -m tcdoctor.run.serve SPEC.json`, `main`).

Parent: when the target gives a traffic or `--traffic N` asks for one (experiments/serving.py
`asked`, read from the cold process's environment record: without a traffic nothing here starts
and nothing is imported beyond this module), experiments/serving.py's `Stage` plans the parts and
this module starts each in a fresh process through run/process.py's `ChildProcess` (its own
session, its own cache folder, killed a little after its budget), feeds its events to the
progress lines (each names the part that runs: "serving: replaying 200 requests (compiled)") and
hands back what it measured: the pieces the child streamed (`result` events: whatever finished
before a crash or a kill is kept) and, where it failed, one line saying how. The stage's events
are the section (one `done` event, phase "serving") and one `failed` event per failure (a part,
or a request the traffic or the model could not serve): the report's errors, exit 4.

Cache folders: the replay, each strategy and the host part start from an empty folder seeded with
the machine's probed ISA checks (run/isa_seed.py; unless --isa-probe every); the proof
part (the restart) from a copy of the replay's folder, never the original.

Child: reads its ServeSpec, sets the cache folder and arms faulthandler before torch is imported,
loads the target (its build() timed: the restart's build_s), builds the part's ServeContext
(probes/traffic_replay.py) and runs the part; it exits with os._exit once its events are written.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import time
from typing import Any

from ..experiments import serving
from ..experiments.serving import KILL_GRACE_S, ServeSpec
from ..options import Options
from ..units import MACHINE_PROBED_CACHE
from . import isa_seed
from .process import (
    ChildProcess,
    done,
    exited_message,
    last_started,
    stack_dump_after,
    timed_out_message,
    where_from_stacks,
)
from .progress import Progress
from .stream import read_events

SOURCE = "serving"  # the progress lines' source name
COPY_OF_REPLAY = "a copy of the replay process's cache folder"


def stage(
    target: str,
    options: Options,
    workdir: str,
    deadline: float,
    prog: Progress,
    events: list[dict],
) -> list[dict]:
    """The serving section's events for the report (none when no traffic is asked for)."""
    env = done(events, "environment") or {}
    ask = serving.asked(options, env.get("workload"))
    if ask is None:
        return []
    t0 = time.monotonic()
    starter = _Starter(target, options, workdir, deadline, prog, ask["requests"])
    plan = serving.Parts(starter.start, options, ask, lambda: deadline - time.monotonic())
    plan.run()
    out = [
        {
            "event": "done",
            "phase": "serving",
            "seconds": time.monotonic() - t0,
            "data": plan.section(),
        }
    ]
    for f in plan.failures:
        out.append(
            {
                "event": "failed",
                "phase": f["phase"],
                "error": {"message": f["message"], "where": None},
            }
        )
    return out


class _Starter:
    """Starts one serving part's process and waits for it (experiments/serving.py `Start`)."""

    def __init__(
        self, target: str, options: Options, workdir: str, deadline: float, prog: Progress, n: int
    ):
        self.target, self.options, self.workdir = target, options, workdir
        self.deadline, self.prog, self.n = deadline, prog, n
        self.seed_from = isa_seed.seed_from(options)
        self.replay_cache: str | None = None

    def _cache(self, part: str, tag: str) -> tuple[str, str]:
        path = os.path.join(self.workdir, f"cache-{tag}")
        if part == "proof" and self.replay_cache and os.path.isdir(self.replay_cache):
            shutil.copytree(self.replay_cache, path, symlinks=True, dirs_exist_ok=True)
            isa_seed.mark(path, COPY_OF_REPLAY)
            return path, COPY_OF_REPLAY
        if self.seed_from and isa_seed.seed(path, MACHINE_PROBED_CACHE, self.seed_from):
            start = MACHINE_PROBED_CACHE
        else:
            os.makedirs(path, exist_ok=True)
            start = "empty"
        if part == "replay":
            self.replay_cache = path
        return path, start

    def _aot(self, part: str, extra: dict) -> dict | None:
        """The aot parts' files: the build's folder (the package, the eager reference), and for
        the fresh process that serves it, what the build made."""
        if part == "aot":
            folder = os.path.join(self.workdir, "serve-aot")
            os.makedirs(folder, exist_ok=True)
            return {"out_dir": folder}
        if part == "aot_serve":
            return {"built": extra["built"]}
        return None

    def start(self, part: str, seconds: float, extra: dict) -> tuple[dict | None, str | None]:
        tag = f"serve-{part}" + (f"-{extra['strategy']}" if extra.get("strategy") else "")
        cache, cache_start = self._cache(part, tag)
        paths = {
            k: os.path.join(self.workdir, f"{tag}.{k}") for k in ("events", "stacks", "log", "spec")
        }
        until = min(self.deadline, time.monotonic() + seconds + KILL_GRACE_S)
        spec = ServeSpec(
            target=self.target,
            part=part,
            options=self.options,
            requests=self.n,
            budget_s=seconds,
            started_unix=time.time(),
            cache_dir=cache,
            events_path=paths["events"],
            stacks_path=paths["stacks"],
            dump_after_s=stack_dump_after(until, margin_s=1.5, min_left_s=3),
            warmup=extra.get("warmup"),
            strategy=extra.get("strategy"),
            aot=self._aot(part, extra),
        )
        command = [sys.executable, "-m", "tcdoctor.run.serve", paths["spec"]]
        child = ChildProcess(command, spec, paths["spec"], paths["log"], cache_dir=cache)  # type: ignore[arg-type]
        self.prog.new_child(SOURCE)

        def show() -> None:
            self.prog.feed(SOURCE, read_events(paths["events"]))
            self.prog.tick()

        child.wait(until, tick=show if self.prog.enabled else None)
        rc = child.exit_code()
        events = read_events(paths["events"])
        self.prog.feed(SOURCE, events)
        data = {ev["key"]: ev.get("data") for ev in events if ev.get("event") == "result"}
        if data:
            data["cache_start"] = cache_start
        return data or None, _failure(events, rc, child.timed_out, seconds, paths["stacks"])


def _failure(
    events: list[dict], rc: int, timed_out: bool, seconds: float, stacks: str
) -> str | None:
    """How a part's process failed, in one line (None when it finished its part)."""
    end = next((ev for ev in events if ev.get("event") == "end"), None)
    if end is not None and end.get("ok"):
        return None
    failed = next((ev for ev in events if ev.get("event") == "failed"), None)
    if failed is not None:
        err = failed.get("error") or {}
        where = err.get("where")
        at = f" (at {where['file']}:{where['line']})" if where else ""
        return f"{failed.get('phase')}: {err.get('message')}{at}"
    phase = last_started(events) or "startup"
    where = where_from_stacks(stacks)
    if timed_out:
        return timed_out_message(round(seconds), phase, where)
    return exited_message(rc, phase, where)


# -- the child -------------------------------------------------------------------------------


def _context(spec: ServeSpec, workload: Any, rebuild: Any, sink: Any) -> Any:
    from ..probes import calls
    from ..probes.traffic_replay import ServeContext
    from ..target.pristine import Pristine
    from ..target.traffic import from_workload

    device = calls.detect(workload.model, workload.call_args)
    workload.device_type = device.type
    left = spec.budget_s - (time.time() - spec.started_unix) - 1.0
    return ServeContext(
        workload=workload,
        fresh=Pristine(workload, rebuild).fresh,
        traffic=workload.traffic or from_workload(workload),
        n=spec.requests,
        options=spec.options,
        device=device,
        deadline=time.monotonic() + left,
        sink=sink,
        target=spec.target,
    )


CPU_HOST = "on CPU the host thread runs the kernels: the host time is the latency"
REPLAY_METHOD = (
    "one request at a time in traffic order, synced before and after each (perf_counter around "
    "the call); compiles are the CompilationMetrics entries PyTorch added during each request; the "
    "eager fallback after recompile_limit as PyTorch records it (the metrics entry's fail_reason), "
    "later requests classified off the clock with PyTorch's guard-complete hook"
)


def part_replay(ctx: Any) -> None:
    """The `replay` part: eager then compiled (a fresh Dynamo state, the cache folder empty but for
    the machine's probed ISA checks), then the warm-up derived from the compiled side's compiles.
    One eager call on the example inputs comes first, untimed: the runtime's lazy start (allocator,
    thread pool) is paid before either side, so neither side's first request carries it. The
    user's own warm-up (`Traffic(warmup=...)`), when given, is served first on each side, as the
    server's start-up: on the compiled side it is timed and its compiles are the start-up's
    (`startup`), so the traffic's compiles are those the warm-up did not cover."""
    from ..probes import dynamo_state, warmup

    method = REPLAY_METHOD + ("" if ctx.device.type == "cuda" else f"; {CPU_HOST}")
    ctx.put("method", f"{ctx.n} requests replayed eager, then compiled, in one fresh process")
    ctx.put("process", "replay")
    eager_model = ctx.fresh().model
    ctx.call(eager_model, ctx.workload.call_args)
    warmup.run_user_warmup(ctx, eager_model, "serving: your warm-up (eager)")
    eager = ctx.replay(eager_model, f"serving: replaying {ctx.n} requests (eager)")
    ctx.put("eager", {**eager.to_dict(), "method": method})
    dynamo_state.fresh()
    model = ctx.compile(ctx.fresh().model)
    started = warmup.run_user_warmup(ctx, model, "serving: your warm-up (compiled)")
    if started is not None:
        ctx.put("startup", warmup.startup_record(started))
    label = f"serving: replaying {ctx.n} requests (compiled)"
    compiled = ctx.replay(model, label, limit_hit=started.limit_hit if started else None)
    ctx.put("compiled", {**compiled.to_dict(), "method": method})
    ctx.put("warmup", warmup.derive(compiled, ctx))


def part_aot(spec: ServeSpec, ctx: Any) -> None:
    """The ahead-of-time part (probes/aot.py, the `aot` helper's): `aot` exports and builds the
    package (and puts the `aot` dict as it stands unserved), `aot_serve` loads and serves it in a
    fresh process and puts the whole dict (probes/aot.py `finish` joins the two)."""
    from ..probes import aot

    files = spec.aot or {}
    if spec.part == "aot":
        built = aot.run(
            ctx.fresh(),
            ctx.requests(),
            out_dir=files["out_dir"],
            deadline=ctx.deadline,
            sink=ctx.sink,
        )
        ctx.put("built", built)
        ctx.put("unserved", aot.finish(built, None))
        return
    built = files["built"]
    served = aot.load_and_serve(
        built["package_path"],
        ctx.requests(),
        call=ctx.call,
        sync=ctx.sync,
        deadline=ctx.deadline,
        reference_path=built.get("reference_path"),
        n_requests=ctx.n,
        device=ctx.device,
        sink=ctx.sink,
    )
    ctx.put("aot", aot.finish(built, served))


def _run_part(spec: ServeSpec, ctx: Any, spawn: dict) -> None:
    if spec.part == "replay":
        part_replay(ctx)
    elif spec.part == "proof":
        from ..probes.warmup import part_proof

        part_proof(ctx, spec.warmup or [], spawn)
    elif spec.part == "strategy":
        from ..experiments.serve_strategies import part_strategy

        ctx.put("row", part_strategy(ctx, spec.strategy or ""))
    elif spec.part == "host":
        from ..probes.serve_threads import part_host

        part_host(ctx, spec.warmup or [])
    elif spec.part in ("aot", "aot_serve"):
        part_aot(spec, ctx)
    else:
        raise ValueError(f"unknown serving part {spec.part!r}")


def main(spec_path: str) -> int:
    spec = ServeSpec.read(spec_path)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = spec.cache_dir
    stacks = open(spec.stacks_path, "w")  # noqa: SIM115 - must outlive this function for faulthandler
    faulthandler.enable(file=stacks, all_threads=True)
    if spec.dump_after_s:
        faulthandler.dump_traceback_later(spec.dump_after_s, exit=False, file=stacks)
    from .stream import FileSink

    sink = FileSink(spec.events_path)
    import torch

    spawn: dict = {"started_unix": spec.started_unix, "import_s": time.time() - spec.started_unix}
    if spec.options.threads is not None:
        torch.set_num_threads(spec.options.threads)
    from ..target.userframes import describe_exception
    from .runner import load_target

    t0 = time.time()
    loaded = load_target(spec.target, sink)
    if isinstance(loaded, int):
        return loaded
    spawn["build_s"] = time.time() - t0
    workload, rebuild = loaded
    if workload.kind == "train":
        why = "a TrainStep is trained, not served: --traffic replays a Workload's requests"
        sink({"event": "failed", "phase": f"serving {spec.part}", "error": {"message": why}})
        sink({"event": "end", "ok": False})
        return 0
    try:
        _run_part(spec, _context(spec, workload, rebuild, sink), spawn)
    except Exception as exc:  # noqa: BLE001 - the part's failure is one line in the report
        sink({"event": "failed", "phase": f"serving {spec.part}", "error": describe_exception(exc)})
        sink({"event": "end", "ok": False})
        return 0
    sink({"event": "end", "ok": True})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
