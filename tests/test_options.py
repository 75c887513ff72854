"""Each analysis option is declared once, in tcdoctor/options.py: --help, the click options and the
Options that a command line builds all come from that one table."""

import ast
import dataclasses
import os
import pathlib

import pytest
from click.testing import CliRunner
from conftest import ROOT

from tcdoctor import cli
from tcdoctor.errors import TcdoctorError
from tcdoctor.options import DEFAULT_TORCH_TRACE_DIR, Options

PKG = pathlib.Path(ROOT) / "tcdoctor"


def _spellings(field: dataclasses.Field) -> list[str]:
    """The flags of one Options field: "--fixes/--no-fixes" is two."""
    return [s for flag in field.metadata.get("flags", ()) for s in flag.spelling.split("/")]


FLAGGED = [f for f in dataclasses.fields(Options) if _spellings(f)]


def test_every_options_field_has_flags_except_none():
    assert [f.name for f in dataclasses.fields(Options) if not _spellings(f)] == []


@pytest.mark.parametrize("command", ["analyze", "check", "sweep"])
def test_help_lists_every_flagged_field_with_its_help(command):
    out = CliRunner().invoke(cli.main, [command, "--help"], terminal_width=1000).output
    options = {opt for p in cli.main.commands[command].params for opt in p.opts + p.secondary_opts}
    for f in FLAGGED:
        for spelling in _spellings(f):
            assert spelling in options and spelling in out, (f.name, spelling)
        for flag in f.metadata["flags"]:
            assert flag.help in out, f.name


def test_report_options_keep_their_names_and_order():
    """A report stores Options.to_dict(): the JSON keys and their order stay."""
    assert list(Options().to_dict()) == [
        "backend",
        "mode",
        "threads",
        "timeout_s",
        "budget_s",
        "profile_budget_s",
        "warm",
        "trace_dir",
        "modes",
        "submodules",
        "depth",
        "dynamic",
        "training_ways",
        "fallback_random",
        "fixes",
        "fix_budget_s",
        "compile_remedies",
        "nproc",
        "nnodes",
        "node_rank",
        "rdzv_endpoint",
        "rdzv_backend",
        "dist_backend",
        "pg_timeout_s",
        "torch_trace",
        "processes",
        "min_processes",
        "traffic",
        "isa_probe",
    ]
    opts = Options(budget_s=0.5, modes=["default", "max-autotune"], nproc=2)
    assert Options.from_dict({**opts.to_dict(), "in_process": True}) == opts


def _declarations(spelling: str) -> list[str]:
    """Where a flag is declared: a string of tcdoctor/options.py, or an argument of a click.option
    call anywhere in the package (other modules only mention flags, in messages and torchrun's
    command line)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name == "options.py":
            strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        else:
            calls = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("option", "Option")
            ]
            strings = [a for c in calls for a in c.args if isinstance(a, ast.Constant)]
        for s in strings:
            if isinstance(s.value, str) and spelling in s.value.split("/"):
                found.append(f"{path.relative_to(PKG.parent)}:{s.lineno}")
    return found


@pytest.mark.parametrize("spelling", [s for f in FLAGGED for s in _spellings(f)])
def test_every_analysis_flag_is_declared_once(spelling):
    assert len(_declarations(spelling)) == 1, _declarations(spelling)


def test_click_options_are_declared_only_by_the_cli():
    for path in sorted(PKG.rglob("*.py")):
        if path.name != "cli.py":
            assert "click.option(" not in path.read_text(encoding="utf-8"), path


@pytest.fixture
def parsed(monkeypatch, tmp_path):
    """Run `tcdoctor <command> ...` up to the analysis, which is replaced by one that records what
    it was given, (target, Options, progress), and stops the command."""
    calls = []

    def record(target, opts, progress, questions=None):
        calls.append((target, opts, progress))
        raise TcdoctorError("stopped by the test", 2)

    monkeypatch.setattr("tcdoctor.run.launcher.analyze_target", record)
    monkeypatch.setattr("tcdoctor.run.distributed.analyze_distributed", record)
    monkeypatch.chdir(tmp_path)

    def run(*args):
        result = CliRunner().invoke(cli.main, list(args))
        assert result.exit_code == 2 and "stopped by the test" in result.output, result.output
        (call,) = calls
        return call

    return run


def test_a_plain_command_line_gives_the_default_options(parsed):
    target, opts, progress = parsed("analyze", "m.py:build")
    assert (target, progress) == ("m.py:build", True)
    assert opts == Options(
        backend="inductor",
        mode=None,
        threads=None,
        timeout_s=600.0,
        budget_s=5.0,
        profile_budget_s=1.0,
        warm=True,
        trace_dir=None,
        modes=["default"],
        submodules=None,
        depth=1,
        dynamic=None,
        training_ways=True,
        fallback_random=False,
        fixes=True,
        fix_budget_s=None,
        nproc=1,
        nnodes=1,
        node_rank=None,
        rdzv_endpoint=None,
        rdzv_backend=None,
        dist_backend=None,
        pg_timeout_s=None,
        torch_trace=None,
    )


@pytest.mark.parametrize("command", ["analyze", "check"])
def test_every_analysis_option_reaches_options(parsed, command):
    extra = ["--max-graph-breaks", "99"] if command == "check" else []
    target, opts, progress = parsed(
        command,
        "m.py:build",
        *extra,
        *("--backend", "eager", "--mode", "max-autotune", "--threads", "4"),
        *("--timeout", "30", "--budget", "0.5", "--profile-budget", "0.2", "--no-warm"),
        *("--trace", "traces", "--expected-calls", "100", "--modes", " default,reduce-overhead,"),
        *("--submodules", "--depth", "2", "--no-dynamic", "--no-training-ways"),
        *("--fallback-random", "--no-fixes", "--fix-budget", "25", "-q"),
        *("--torch-trace", "tt"),
    )
    assert (target, progress) == ("m.py:build", False)
    assert opts == Options(
        backend="eager",
        mode="max-autotune",
        threads=4,
        timeout_s=30.0,
        budget_s=0.5,
        profile_budget_s=0.2,
        warm=False,
        trace_dir="traces",
        modes=["default", "reduce-overhead"],
        submodules=True,
        depth=2,
        dynamic=False,
        training_ways=False,
        fallback_random=True,
        fixes=False,
        fix_budget_s=25.0,
        torch_trace=os.path.join(os.getcwd(), "tt"),
    )


def test_a_distributed_command_line_traces_by_default(parsed):
    _, opts, _ = parsed(
        "analyze", "m.py:build", "--nproc", "2", "--dist-backend", "gloo", "--pg-timeout", "60"
    )
    assert opts == Options(
        nproc=2,
        dist_backend="gloo",
        pg_timeout_s=60.0,
        torch_trace=os.path.join(os.getcwd(), "tcdoctor-torch-trace"),
    )
    assert opts.distributed and DEFAULT_TORCH_TRACE_DIR == "tcdoctor-torch-trace"


def test_a_multi_node_command_line_without_trace(parsed):
    _, opts, _ = parsed(
        "analyze",
        "m.py:build",
        *("--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "host:29500"),
        *("--rdzv-backend", "c10d", "--torch-trace", "tt", "--no-torch-trace"),
    )
    assert opts == Options(
        nnodes=2, node_rank=1, rdzv_endpoint="host:29500", rdzv_backend="c10d", torch_trace=None
    )
