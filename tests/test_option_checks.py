"""Options are checked by their declared kind (tcdoctor/options.py), one path for the command line
and the Python API: a bad value is an OptionError (a ValueError; exit 2 and one line at the CLI)
naming the option and what it accepts. Nothing here runs a model."""

from __future__ import annotations

import dataclasses

import click
import pytest
import torch
from click.testing import CliRunner

import tcdoctor
from tcdoctor import cli
from tcdoctor.errors import OptionError, UsageError
from tcdoctor.experiments.specs import ModeSpec
from tcdoctor.experiments.strategies import plan
from tcdoctor.options import MODES, Options, cli_params


@pytest.fixture
def recorded(monkeypatch):
    """tcdoctor.analyze("m.py:build", ...) up to the launcher, which records the Options it got."""
    calls = []

    def record(target, opts, progress, questions):
        calls.append(opts)
        return "report", 0

    monkeypatch.setattr("tcdoctor.run.launcher.analyze_target", record)
    return calls


def test_modes_as_one_string_is_one_mode_not_one_per_character(recorded):
    assert tcdoctor.analyze("m.py:build", modes="max-autotune") == "report"
    (opts,) = recorded
    assert opts.modes == ["max-autotune"]
    w = tcdoctor.Workload(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    specs = [s for s in plan(w, opts, 0, 99) if isinstance(s, ModeSpec)]
    assert specs == [ModeSpec("max-autotune")]


def test_modes_take_a_comma_string_or_a_sequence_as_the_cli_parses_them():
    assert Options(modes=" default, max-autotune,").modes == ["default", "max-autotune"]
    assert Options(modes=("reduce-overhead", "default")).modes == ["reduce-overhead", "default"]
    assert Options(modes="default,default").modes == ["default"]


@pytest.mark.parametrize(
    "options, named, accepts",
    [
        ({"threads": 0}, "threads (--threads)", "an integer >= 1"),
        ({"threads": 2.5}, "threads (--threads)", "an integer >= 1"),
        ({"threads": True}, "threads (--threads)", "an integer >= 1"),
        ({"budget_s": -1.0}, "budget_s (--budget)", "a number >= 0.05"),
        ({"timeout_s": float("nan")}, "timeout_s (--timeout)", "a number >= 1"),
        ({"mode": "fast"}, "mode (--mode)", "one of default, lite, reduce-overhead"),
        ({"modes": "max-autotune,fastest"}, "modes (--modes)", "each one of default"),
        ({"modes": []}, "modes (--modes)", "a comma-separated string or a list"),
        ({"dist_backend": "mpi"}, "dist_backend (--dist-backend)", "one of gloo, nccl"),
        ({"backend": ""}, "backend (--backend)", "a string"),
        ({"backend": 3}, "backend (--backend)", "a string"),
        ({"fixes": "no"}, "fixes (--fixes/--no-fixes)", "True or False"),
        ({"warm": 0}, "warm (--no-warm)", "True or False"),
        ({"depth": "0"}, "depth (--depth)", "an integer >= 1"),
    ],
)
def test_a_bad_option_is_a_value_error_naming_it_and_what_it_takes(options, named, accepts):
    with pytest.raises(ValueError) as info:
        Options(**options)
    msg = str(info.value)
    assert isinstance(info.value, OptionError) and isinstance(info.value, UsageError)
    assert msg.startswith(f"option {named} takes ") and accepts in msg and "\n" not in msg, msg


def test_the_api_checks_before_running_anything(recorded):
    model, x = torch.nn.Linear(2, 2), torch.randn(1, 2)
    for kw in ({"threads": 0}, {"budget_s": -1}, {"mode": "max"}, {"modes": "fast"}):
        with pytest.raises(ValueError):
            tcdoctor.analyze("m.py:build", **kw)
        with pytest.raises(ValueError):
            tcdoctor.analyze(model, x, **kw)
    with pytest.raises(ValueError, match=r"unknown option thread \(options: backend, mode"):
        tcdoctor.analyze(model, x, thread=1)
    assert recorded == []


def test_an_unknown_backend_is_refused_before_an_in_process_analysis():
    with pytest.raises(
        OptionError, match=r"option backend \(--backend\) takes a torch.compile backend.*'nope'"
    ):
        tcdoctor.analyze(torch.nn.Linear(2, 2), torch.randn(1, 2), backend="nope")


def test_good_values_are_kept_and_numbers_from_strings_parsed():
    opts = Options(threads="2", budget_s=1, mode="max-autotune", dist_backend="gloo")
    assert (opts.threads, opts.budget_s, opts.mode) == (2, 1.0, "max-autotune")
    assert isinstance(opts.budget_s, float)
    assert Options(submodules=None, dynamic=None, threads=None) == Options()
    assert Options.from_dict(Options(budget_s=0.5).to_dict()) == Options(budget_s=0.5)


@pytest.mark.parametrize(
    "args, named",
    [
        (["--threads", "0"], "option threads (--threads) takes an integer >= 1, got '0'"),
        (["--budget", "-1"], "option budget_s (--budget) takes a number >= 0.05"),
        (["--modes", "max-autotune,fast"], "option modes (--modes) takes"),
        (["--mode", "fast"], "option mode (--mode) takes one of default"),
        (["--timeout", "abc"], "option timeout_s (--timeout) takes a number >= 1"),
    ],
)
@pytest.mark.parametrize("command", ["analyze", "check"])
def test_the_cli_says_it_in_one_line_with_exit_2(monkeypatch, tmp_path, command, args, named):
    monkeypatch.chdir(tmp_path)
    extra = ["--max-graph-breaks", "0"] if command == "check" else []
    result = CliRunner().invoke(cli.main, [command, "m.py:build", *extra, *args])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        result.output.strip()
    ] and result.output.startswith(f"tcdoctor: error: {named}"), result.output


def test_the_cli_leaves_every_check_to_options():
    """One validation path: click passes analysis values on as strings (or flags)."""
    params = {p.name: p for p in cli.main.commands["analyze"].params}
    for cp in cli_params():
        p = params[cp.name]
        assert p.is_flag or p.type is click.STRING, (cp.name, p.type)


def test_modes_are_torch_compiles_own():
    import torch._inductor

    assert set(MODES) == set(torch._inductor.list_mode_options())


def test_every_flagged_field_is_checked():
    """A value no kind accepts (an object) is refused by every field that has a flag."""
    for f in dataclasses.fields(Options):
        if f.metadata.get("flags"):
            with pytest.raises(OptionError):
                Options(**{f.name: object()})
