"""The figures the verdict is judged on, read from a typed report once (`Figures.from_report`),
and the other measured ways of compiling the headline must agree with (`Way`, `other_ways`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import units
from ..report.attribution import Bisection, ModuleDrift
from ..report.processes.claims import (
    Claim,
    lone_regimes_text,
    no_difference_text,
    overall_claim,
)
from ..report.processes.regimes import least_favourable
from ..report.processes.rows import ProcessRow, Regime
from ..report.rules import break_even, cold_warm_ratio
from ..report.sections import (
    FixRow,
    GraphBreak,
    Miscompile,
    NotTried,
    Recompile,
    RemedyRow,
    StrategyRow,
)
from ..report.sections.runtime import Claimed
from ..report.sections.strategies import CudaGraphs
from ..thresholds import Rules
from .recommend import TRAINING_WAYS

if TYPE_CHECKING:
    from ..report.model import Report


@dataclass(frozen=True)
class Figures(Claimed):
    """The figures the verdict is judged on, typed. Built from a report by `from_report` only."""

    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = (
        None  # the decision interval's level (Pocock's per look, across processes)
    )
    speed_not_measured: str | None = None  # why, when speedup is None
    eager_s: float | None = None  # medians per call
    compiled_s: float | None = None
    cold_s: float | None = None  # first compiled call, cold and warm inductor cache
    warm_s: float | None = None
    breaks: int = 0
    graphs: int | None = None  # graphs Dynamo compiled on one call (None: not counted)
    skipped: int = 0  # frames Dynamo skipped: they run eagerly
    recompiles: int = 0
    limit_hit: bool = False
    recompile_limit: int | None = None
    numerics_passed: bool | None = None
    numerics_max_abs_err: float | None = None
    numerics_failed_outputs: tuple[str, ...] = ()
    numerics_not_measured: str | None = None  # why, when numerics_passed is None
    drift_origin: ModuleDrift | None = None  # where the drift starts (numerics.drift.origin)
    guard_fraction: float | None = None  # guard evaluation / compiled median
    guard_s: float | None = None  # guard evaluation per call
    guard_count: int | None = None
    device: str | None = None
    mode: str | None = None
    cudagraph_skips: int = 0
    cudagraphs: CudaGraphs | None = (
        None  # captured vs skipped, PyTorch's reasons (compile.cudagraphs)
    )
    mode_rows: tuple[StrategyRow, ...] = ()  # strategies.modes, eager and the main row included
    compile_failed_message: str | None = None  # set when compiling raised
    break_findings: tuple[GraphBreak, ...] = ()  # graph_breaks.unique
    recompile_events: tuple[Recompile, ...] = ()
    training_ways_measured: bool = False  # rows for the model alone / optimizer alone exist
    tried_fixes: tuple[FixRow, ...] = ()  # fixes run with the real backend in a fresh process
    fix_rows: tuple[FixRow, ...] = ()  # every row of report.fixes, measured or not
    fixes_not_tried: tuple[NotTried, ...] = ()  # planned, left untried
    fixes_enabled: bool = True  # False: --no-fixes (no fix, no backend ablation)
    backend: str | None = None  # the analysis's own backend (options.backend)
    ablation_rows: tuple[StrategyRow, ...] = ()  # eager / aot_eager / the real backend
    drift_bisector: Bisection | None = None  # CompilerBisector on the drift origin, alone
    miscompile: Miscompile | None = (
        None  # the graph and call that diverge (report.numerics.miscompile)
    )
    regions_measured: bool = False  # regional compilation rows exist (strategies.regions)
    ways: tuple[Way, ...] = ()  # other measured ways of compiling (modes, training ways)
    ablation_layer: str | None = None  # where the loss comes from, when the ablation ran
    remedies: tuple[RemedyRow, ...] = ()  # compile-time remedies measured in fresh processes
    regimes: tuple[Regime, ...] = ()  # each regime's figures and decision interval
    undecided_why: str | None = None  # why the processes cannot decide, whatever the interval
    threads: int | None = None  # torch threads in the analysis processes (environment)
    cpu_count: int | None = None
    others_cores: float | None = None  # other programs' median load over the decided-on processes
    idle_cores: float | None = None  # the machine's idle cores, median over those processes
    prediction: tuple[float, float] | None = None  # what another run may see (never decides)
    sequence: dict | None = None  # how many processes timed and why they stopped
    probe_text: str = ""  # the other allocator regime's probe (glibc's thresholds pinned), if run
    medians_where: str = ""  # which process eager_s/compiled_s come from, when several timed
    isa_probe_s: float | None = None  # Inductor's one-off CPU ISA probe inside cold_s, if read
    probed_cold_s: float | None = None  # cold_s less the probe's builds (a machine probed before)

    @classmethod
    def from_report(cls, report: Report) -> Figures:
        rt, c, g, gb, rc, n = (
            report.runtime,
            report.compile,
            report.guards,
            report.graph_breaks,
            report.recompiles,
            report.numerics,
        )
        env = report.environment or {}
        failed = next(
            (str(e.message) for e in report.errors if e.phase in ("compile", "compile_warm")),
            None,
        )
        return cls(
            speedup=rt.speedup,
            ci_low=rt.ci_low,
            ci_high=rt.ci_high,
            ci_level=rt.ci_level,
            speed_not_measured=rt.not_measured,
            eager_s=rt.least_favourable_medians[0],
            compiled_s=rt.least_favourable_medians[1],
            cold_s=c.cold_s,
            warm_s=c.warm_s,
            breaks=gb.count or 0,
            graphs=report.graphs.count,
            skipped=gb.skipped_frames or 0,
            recompiles=rc.count or 0,
            limit_hit=bool(rc.limit_hit),
            recompile_limit=rc.limit,
            numerics_passed=n.passed,
            numerics_max_abs_err=n.max_abs_err,
            numerics_failed_outputs=tuple(n.failed_outputs or ()),
            drift_origin=n.drift.origin if n.drift is not None else None,
            numerics_not_measured=n.not_measured,
            guard_fraction=g.overhead_fraction,
            guard_s=g.overhead_s_per_call,
            guard_count=g.count,
            device=(report.environment or {}).get("device"),
            mode=(report.options or {}).get("mode"),
            cudagraph_skips=c.cudagraph_skips,
            cudagraphs=c.cudagraphs,
            mode_rows=tuple(report.strategies.modes or ()),
            compile_failed_message=failed,
            break_findings=tuple(gb.unique or ()),
            recompile_events=tuple(rc.events or ()),
            training_ways_measured=any(
                r.name in ("model", "optimizer") and r.median_s is not None
                for r in report.strategies.training
            ),
            tried_fixes=tuple(r for r in report.fixes or [] if r.measured),
            fix_rows=tuple(report.fixes or ()),
            fixes_not_tried=tuple(report.fixes_not_tried or ()),
            fixes_enabled=(report.options or {}).get("fixes", True) is not False,
            backend=(report.options or {}).get("backend"),
            ablation_rows=tuple(report.ablation.rows) if report.ablation else (),
            drift_bisector=n.drift.bisector if n.drift is not None else None,
            miscompile=n.miscompile,
            regions_measured=bool(report.strategies.regions and report.strategies.regions.regions),
            ways=tuple(other_ways(report)),
            ablation_layer=report.ablation.layer if report.ablation else None,
            remedies=tuple(c.remedies.measured) if c.remedies else (),
            regimes=tuple(Regime.of(g) for g in rt.regimes or ()),
            undecided_why=rt.undecided_why,
            threads=env.get("threads") if isinstance(env.get("threads"), int) else None,
            cpu_count=env.get("cpu_count") if isinstance(env.get("cpu_count"), int) else None,
            others_cores=_load_median(rt.processes, "other_cores_median"),
            idle_cores=_load_median(rt.processes, "idle_cores_median"),
            prediction=tuple(rt.prediction_interval) if rt.prediction_interval else None,
            sequence=rt.sequence,
            probe_text=units.probes(rt.processes),
            medians_where=_medians_where(rt.processes),
            isa_probe_s=c.isa_probe.seconds if c.isa_probe else None,
            probed_cold_s=c.probed_cold_s,
        )

    def claim(self, rules: Rules) -> Claim:
        """faster / slower / same / below / undecided: the report's `Runtime.claim`, the same rule."""
        return overall_claim(
            (self.ci_low, self.ci_high),
            self.regimes,
            self.undecided_why,
            rules.min_speedup,
            rules.equivalence_margin,
        )

    @property
    def break_even_cold(self) -> dict | None:
        return break_even(self.cold_s, self.eager_s, self.compiled_s)

    @property
    def break_even_warm(self) -> dict | None:
        return break_even(self.warm_s, self.eager_s, self.compiled_s)

    def unrepayable(self, horizon: int) -> bool:
        """Not even an infinitely fast compiled call repays the compile within `horizon` calls: the
        saving per call is at most eager's whole call, so a first call (the warm one, the least a
        process pays) longer than `horizon` eager calls is never repaid, whatever the speedup."""
        first = min(x for x in (self.cold_s, self.warm_s, float("inf")) if x is not None)
        return bool(self.eager_s) and first != float("inf") and first > horizon * self.eager_s

    def never_repaid(self, horizon: int) -> bool:
        """Faster per call, but neither the cold nor the warm compile is repaid within horizon."""
        cold, warm = self.break_even_cold, self.break_even_warm
        return bool(cold) and cold["calls"] > horizon and not (warm and warm["calls"] <= horizon)

    def best_remedy(self, rules: Rules) -> RemedyRow | None:
        """The measured compile-time remedy repaid soonest: significantly faster than eager,
        numerics not failing (None when no remedy is both)."""
        good = [
            r
            for r in self.remedies
            if r.significantly_faster(rules)
            and r.numerics_passed is not False
            and r.steps_to_repay is not None
        ]
        return min(good, key=lambda r: (r.steps_to_repay, r.startup_s)) if good else None

    def remedy_speed_cost(self, row: RemedyRow) -> str:
        """What the remedy does to speed next to the main analysis (each paired against eager in
        its own process, so speedups are compared, not medians across processes)."""
        ci = row.decision_interval  # its own noise and the spread between processes
        if row.speedup is None or self.speedup is None:
            return "speed not compared"
        if row.name == "portable_cache":  # the cold compile's own graphs, loaded: no speed to lose
            return (
                f"the same compiled code ({row.vs_eager()} vs eager in "
                f"its own process, {units.ratio(self.speedup)} in the main analysis)"
            )
        if ci[1] is not None and self.ci_low is not None and ci[1] < self.ci_low:
            cost = 1.0 - row.speedup / self.speedup
            return (
                f"{units.percent(cost)} slower per call ({row.vs_eager()} "
                f"vs eager instead of {units.ratio(self.speedup)})"
            )
        if ci[0] is not None and self.ci_high is not None and ci[0] > self.ci_high:
            return f"faster ({row.vs_eager()} vs eager)"
        return f"same speed within the CI ({row.vs_eager()} vs eager)"

    @property
    def cold_warm_ratio(self) -> float | None:
        return cold_warm_ratio(self.cold_s, self.warm_s)

    @property
    def regimes_text(self) -> str:
        """Both allocator regimes' speedups, when the processes fell in both ('' otherwise)."""
        return units.regimes(self.regimes, self.ci_level)

    @property
    def speed_text(self) -> str:
        """'1.52× (95% CI 1.49–1.56; another run may see 1.40–1.65)'; with the allocator regimes
        when they differ."""
        return self._with_range(
            units.ratio(self.speedup, (self.ci_low, self.ci_high), level=self.ci_level)
        )

    @property
    def faster_text(self) -> str:
        """'1.52× faster (95% CI 1.49–1.56; …)'; 'faster in both allocator regimes: …' when the
        processes fell in two."""
        if self.regimes_text:
            return f"faster in both allocator regimes: {self.regimes_text}"
        return self._with_range(
            units.ratio(self.speedup, (self.ci_low, self.ci_high), "faster", self.ci_level)
        )

    def _with_range(self, text: str) -> str:
        if self.prediction and text.endswith(")"):
            text = text[:-1] + f"; {units.another_run(self.prediction)})"
        text += f", by allocator regime: {self.regimes_text}" if self.regimes_text else ""
        return text + (f"; {self.probe_text}" if self.probe_text else "")

    def claim_text(self, rules: Rules) -> str:
        """What the processes say of compiled against eager, in words, for a verdict that is not
        'faster': slower, the same within the threshold, or can't tell at this precision; not
        judged at all where the processes cannot decide whatever the interval (`undecided_why`:
        timed under sustained load), so that an interval wholly above 1 under load never reads
        "not measurably faster" (a sweep of two analyses at once on two cores: 10.79×, 95% CI
        10.07-11.56, did)."""
        claim = self.claim(rules)
        if claim == Claim.SLOWER:
            return "slower than eager"
        ci = (self.ci_low, self.ci_high)
        margin = rules.equivalence_margin
        if claim == Claim.SAME:  # two one-sided tests at the margin (processes.claims.equivalent)
            return f"the same speed as eager: {no_difference_text(ci, margin)}"
        if claim == Claim.BELOW:
            return f"faster than eager, but not by {rules.min_speedup:g}×"
        if self.regimes:  # the regimes read different sides, or a side only where one decides
            lone = lone_regimes_text(self.regimes)
            return "not faster in every allocator regime" + (f" ({lone})" if lone else "")
        if self.undecided_why:  # sustained load (claims.combine): not the interval's reading
            return "not judged against eager, whatever its interval"
        stop = self.sequence.stopped if self.sequence else None
        text = "not measurably faster than eager"
        if stop in ("cap", "budget", "futile"):
            text += ": can't tell at this precision"
        nd = no_difference_text(ci, margin)  # 'no difference larger than a–b' where it holds 1
        return text + (f", {nd}" if nd else "")

    @property
    def sequence_text(self) -> str:
        """'; 6 process(es) timed: the cap was reached undecided (cap 6, --processes)' or ''."""
        return f" ({units.stopped(self.sequence)})" if self.sequence else ""


@dataclass(frozen=True)
class Way:
    """Another measured way of compiling the same workload (a mode, a training way): a row the
    headline must agree with."""

    label: str  # "compile the model only", "mode='max-autotune'"
    row: StrategyRow

    def usable(self, rules: Rules) -> bool:
        """Significantly faster than eager by its decision interval (StrategyRow.significantly_faster:
        the spread between processes in it), numerics not failing, compile time repaid in the horizon."""
        r, horizon = self.row, rules.expected_calls
        repaid = r.steps_to_repay is not None and r.steps_to_repay <= horizon
        return r.significantly_faster(rules) and r.numerics_passed is not False and repaid


def other_ways(report: Report) -> list[Way]:
    """The measured rows that are not the main analysis: the headline is decided over them too."""
    st = report.strategies
    main = "main analysis"
    out = [
        Way(TRAINING_WAYS.get(r.name or "", r.name or "?"), r)
        for r in st.training or []
        if r.source != main and not r.baseline and r.median_s is not None
    ]
    out += [
        Way(f"compile with mode={r.name!r}", r)
        for r in st.modes or []
        if r.source != main and not r.note and r.speedup is not None
    ]
    return out


def _load_median(processes: list[ProcessRow] | None, key: str) -> float | None:
    """A load figure while the counted processes timed: the median over those processes of each
    one's median round (probes/timing.py's `other_cores_median`: other programs' load;
    `idle_cores_median`: the cores nobody used), in cores."""
    loads = [getattr(p.load, key, None) for p in processes or [] if not p.excluded and not p.probe]
    loads = [x for x in loads if isinstance(x, (int, float))]
    return statistics.median(loads) if loads else None


def _medians_where(processes: list[ProcessRow] | None) -> str:
    """', in the warm process, the least favourable of 3' when several processes timed the call."""
    worst = least_favourable(processes or [])
    if worst is None or len(processes or []) < 2:
        return ""
    return f", in the {worst.process} process, the least favourable of {len(processes)}"
