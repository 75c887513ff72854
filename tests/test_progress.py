"""Progress on stderr, derived from the children's phase events: a line per phase (plain), one line in place (TTY)."""

import io

from conftest import ONE_PROCESS, ROOT

from tcdoctor.experiments.specs import Spec
from tcdoctor.report.events import Event
from tcdoctor.run.progress import Progress, headline

COLD = [
    Event(event="start", phase="load"),
    Event(event="done", phase="load", data={"name": "build"}),
    Event(event="start", phase="graph_breaks", t=1.0),
    Event(
        event="done",
        phase="graph_breaks",
        seconds=1.5,
        data={"graphs": {"count": 3}, "graph_breaks": {"count": 2, "skipped_frames": 0}},
    ),
    Event(event="start", phase="compile", t=2.0),
    Event(
        event="done",
        phase="compile",
        seconds=13.2,
        data={"first_call_s": 13.1, "guards": {"count": 45}},
    ),
    Event(event="start", phase="runtime"),
    Event(
        event="done",
        phase="runtime",
        seconds=5.0,
        data={"speedup": 1.52, "speedup_ci": [1.49, 1.56]},
    ),
    Event(event="start", phase="numerics"),
    Event(
        event="done", phase="numerics", seconds=0.01, data={"passed": True, "max_abs_err": 4.8e-07}
    ),
    Event(event="start", phase="recompiles"),
    Event(event="done", phase="recompiles", seconds=0.5, data={"count": 1, "limit_hit": False}),
    Event(event="done", phase="plan", data={"strategies": [{"kind": "dynamic", "how": "dynamic"}]}),
    Event(event="end", ok=True),
]
WARM = [
    Event(event="start", phase="compile_warm"),
    Event(event="done", phase="compile_warm", seconds=1.3, data={"warm_s": 1.2}),
    Event(event="start", phase="memory"),
    Event(event="failed", phase="memory", error={"message": "RuntimeError: boom\nsecond line"}),
    Event(event="start", phase="profile"),
    Event(event="done", phase="profile", seconds=1.0, data={"guard_overhead_s_per_call": 4.1e-06}),
]
STRATEGY = [
    Event(event="start", phase="load"),
    Event(event="done", phase="load", data={"name": "build"}),
    Event(event="start", phase="strategy:dynamic:dynamic"),
    Event(
        event="done",
        phase="strategy:dynamic:dynamic",
        seconds=2.0,
        data={"spec": {}, "compiles": 2, "compile_s": 1.5, "limit_hit": False},
    ),
    Event(event="end", ok=True),
]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def run_all(prog, clock):
    prog.feed("cold", COLD[:3])
    prog.feed("cold", COLD[:3])  # the same list again: nothing new, nothing repeated
    clock.t += 2
    prog.feed("cold", COLD)
    prog.feed("warm", WARM)
    prog.strategy("strategy-0", 2, 4, Spec.from_dict({"kind": "dynamic", "how": "dynamic"}))
    clock.t += 7
    prog.feed("strategy-0", STRATEGY)
    prog.close()


def test_plain_mode_one_line_per_finished_phase():
    out, clock = io.StringIO(), Clock()
    run_all(Progress(tty=False, file=out, clock=clock), clock)
    assert out.getvalue().splitlines() == [
        "tcdoctor: load target … done",
        "tcdoctor: graph breaks … 2 breaks, 3 graphs  [1.50 s]",
        "tcdoctor: compile (cold) … first call 13.10 s, 45 guards  [13.20 s]",
        "tcdoctor: timing … 1.52× (95% CI 1.49–1.56)  [5.00 s]",
        "tcdoctor: numerics … passed (max abs err 4.8e-07)  [10.00 ms]",
        "tcdoctor: recompiles … 1  [500.00 ms]",
        "tcdoctor: warm compile … 1.20 s  [1.30 s]",
        "tcdoctor: memory … FAILED: RuntimeError: boom",
        "tcdoctor: profile … guards 4.1 µs/call  [1.00 s]",
        "tcdoctor: strategy 2/4: dynamic=True … 2 compiles, 1.50 s compiling  [7.00 s]",
    ]


def test_tty_mode_rewrites_one_line_and_clears_it():
    out, clock = io.StringIO(), Clock()
    prog = Progress(tty=True, file=out, clock=clock, width=200)
    prog.feed("cold", COLD[4:5])  # compile starts
    clock.t += 3
    prog.tick()
    prog.feed("cold", COLD[4:6])  # compile done
    prog.feed("cold", COLD[4:7])  # timing starts
    text = out.getvalue()
    assert "\n" not in text
    frames = text.split("\r")[1:]
    assert frames[0] == "tcdoctor: compile (cold) … 0.0 µs"
    assert frames[1] == "tcdoctor: compile (cold) … 3.00 s"
    assert (
        frames[2].rstrip() == "tcdoctor: compile (cold) … first call 13.10 s, 45 guards  [13.20 s]"
    )
    assert (
        frames[3]
        == "tcdoctor: timing … 0.0 µs  | compile (cold) … first call 13.10 s, 45 guards  [13.20 s]"
    )
    prog.close()
    assert out.getvalue().endswith("\r" + " " * len(frames[3]) + "\r")


def test_tty_line_is_cut_to_the_terminal_width():
    out = io.StringIO()
    prog = Progress(tty=True, file=out, clock=Clock(), width=30)
    prog.feed("cold", COLD[:6])
    assert all(len(frame) <= 30 for frame in out.getvalue().split("\r"))


def test_disabled_writes_nothing():
    out, clock = io.StringIO(), Clock()
    run_all(Progress(enabled=False, tty=False, file=out, clock=clock), clock)
    assert out.getvalue() == ""


def test_tried_fixes_and_the_ablation_have_a_label_and_a_figure():
    fix = {"kind": "fix", "fix": {"kind": "env", "name": "malloc_thresholds"}}
    assert Spec.from_dict(fix).label == "fix: malloc_thresholds"
    assert (
        Spec.from_dict({"kind": "ablation", "backend": "aot_eager"}).label == "backend='aot_eager'"
    )
    row = {"outcome": "helps", "after": {"speedup": 1.04, "speedup_ci": [1.04, 1.05]}}
    assert headline("strategy:fix:malloc_thresholds", row) == "helps (1.04× (95% CI 1.04–1.05))"
    assert headline("strategy:fix:x", {"outcome": "fails"}) == "fails"


def test_missing_or_odd_figures_leave_the_elapsed_time():
    assert headline("runtime", {"speedup": None}) is None
    assert headline("graph_breaks", {"graphs": [1, 2]}) is None
    assert headline("profile", "not a dict") is None
    out = io.StringIO()
    Progress(tty=False, file=out, clock=Clock()).feed(
        "warm", [Event(event="done", phase="memory", seconds=0.25, data={"shape": "new"})]
    )
    assert out.getvalue() == "tcdoctor: memory … 250.00 ms\n"


def test_each_timing_only_process_shows_its_own_lines():
    """The timing-only processes feed one source one after another, each from its own first event:
    the second's lines are shown, not skipped as the first's already seen."""
    out = io.StringIO()
    prog = Progress(tty=False, file=out, clock=Clock())
    for seconds in (0.25, 0.5):
        prog.new_child("timing")
        events = [Event(event="start", phase="load")]
        prog.feed("timing", events)
        events.append(Event(event="done", phase="load", seconds=seconds))
        prog.feed("timing", events)
    assert out.getvalue() == (
        "tcdoctor: load target (timing process) … 250.00 ms\n"
        "tcdoctor: load target (timing process) … 500.00 ms\n"
    )


FAST = [
    "--threads",
    "1",
    "--backend",
    "eager",
    "--budget",
    "0.3",
    *ONE_PROCESS,
    "--html",
    "",
]
COLD_LABELS = (
    "environment",
    "eager call",
    "graph breaks",
    "compile (cold)",
    "timing",
    "numerics",
    "recompiles",
)


def test_cli_shows_each_phase_on_stderr_and_quiet_silences_it(cli):
    rc, out, err = cli("analyze", f"{ROOT}/samples/mlp.py:build", *FAST)
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("tcdoctor: ")]
    for label in COLD_LABELS:
        assert sum(ln.startswith(f"tcdoctor: {label} … ") for ln in lines) == 1, (label, err)
    timing = next(ln for ln in lines if ln.startswith("tcdoctor: timing"))
    assert "× (95% CI " in timing, timing
    assert "tcdoctor: timing" not in out  # progress never mixes with the summary on stdout

    rc, out, err = cli(
        "check", f"{ROOT}/samples/mlp.py:build", *FAST[:-2], "--max-graph-breaks", "0", "--quiet"
    )
    assert rc == 0, out + err
    assert "PASS  graph breaks: " in out, out
    assert err.strip() == "", err


def test_a_fatal_failure_is_left_to_the_cli_error_line():
    out = io.StringIO()
    Progress(tty=False, file=out, clock=Clock()).feed(
        "cold",
        [
            Event(event="start", phase="eager"),
            Event(
                event="failed", phase="eager", error={"message": "RuntimeError: broken"}, fatal=True
            ),
        ],
    )
    assert out.getvalue() == ""
