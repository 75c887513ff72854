"""The docs say what the code does: every flag they name exists, links resolve, the README stays short
and its commands are the ones CI runs, and the verdict's threshold table is RULES
(tcdoctor/thresholds.py).

Flags are read from code only (inline `code` spans, fenced blocks and indented blocks), where a reader
copies them from; prose dashes are not flags. The valid flags are collected from click itself (every
command of `tcdoctor.cli.main`, primary and `--no-` forms, `--help` included), so a flag renamed or
removed in options.py or cli.py fails here until the docs follow. Only the docs files that exist are
read: pages written on other branches are checked once they are merged.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from tcdoctor.cli import main
from tcdoctor.thresholds import RULES

ROOT = Path(__file__).resolve().parent.parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

# Flags of other tools that the docs name, by tool; keep it small and say whose each one is.
OTHER_TOOLS = {
    "pip": {"--no-deps", "--upgrade", "--index-url", "--extra-index-url"},
    "ruff": {"--check"},
    "torchrun": {"--standalone", "--nproc-per-node"},
    "tlparse": {"--all-ranks-html"},
    "pytest (tcdoctor's plugin)": {"--tcdoctor-update-known-breaks"},
    "PyTorch's benchmarks/dynamo runner": {"--total-partitions", "--partition-id"},
    "the GPU check's scripts (benchmarks/gpu_check.sh, benchmarks/gpu/process_state.py)": {
        "--quick",
        "--plan",
        "--device",
    },
    "SLURM's sbatch and srun": {
        "--array",
        "--cpus-per-task",
        "--dependency",
        "--job-name",
        "--parsable",
        "--time",
        "--wrap",
        "--nodes",
        "--ntasks",
        "--ntasks-per-node",
        "--gpus-per-node",
    },
    "hostname": {"--ip-address"},
    "ray start and ray job submit (docs/cluster.md)": {
        "--head",
        "--block",
        "--address",
        "--node-ip-address",
        "--port",
        "--num-cpus",
        "--num-gpus",
        "--include-dashboard",
        "--temp-dir",
        "--working-dir",
        "--disable-usage-stats",
    },
}


def doc_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [f for f in files if f.exists()]


def code_parts(text: str) -> list[str]:
    """The code of a Markdown text: fenced blocks, indented blocks, and inline `code` spans."""
    parts: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    prev_blank = True
    in_indented = False
    for line in text.splitlines():
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            else:
                parts.append(line)
            prev_blank = False
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            in_indented = False
            continue
        if line.startswith("    ") and stripped and (prev_blank or in_indented):
            parts.append(line)
            in_indented = True
        else:
            in_indented = in_indented and not stripped
            prose.append(line)
        prev_blank = not stripped
    parts.extend(re.findall(r"`([^`\n]+)`", "\n".join(prose)))
    return parts


def named_flags(text: str) -> set[str]:
    return {m for part in code_parts(text) for m in FLAG.findall(part)}


def cli_flags() -> set[str]:
    """Every long option of every tcdoctor command, as click declares it (`--help` included)."""
    flags: set[str] = set()

    def walk(cmd: click.Command) -> None:
        for p in cmd.get_params(click.Context(cmd)):
            flags.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("--"))
        if isinstance(cmd, click.Group):
            for sub in cmd.commands.values():
                walk(sub)

    walk(main)
    return flags


def test_code_parts_reads_code_not_prose():
    text = (
        "Prose --not-a-flag and an em dash -- here, `--inline/--no-inline` in code.\n\n"
        "    tcdoctor analyze x.py:build --indented\n\n"
        "- a list item\n  continued --not-code\n\n"
        "```yaml\nrun: tcdoctor check --fenced\n```\n"
    )
    assert named_flags(text) == {"--inline", "--no-inline", "--indented", "--fenced"}


def test_cli_flags_come_from_click():
    flags = cli_flags()
    # analysis options (options.py), a TurnsOff flag, a switch's --no- form, the CLI's own, check's
    for f in (
        "--backend",
        "--no-warm",
        "--no-fallback-random",
        "--expected-calls",
        "--min-speedup",
    ):
        assert f in flags
    assert "--nproc-per-node" not in flags  # torchrun's, not ours


def test_every_flag_the_docs_name_exists():
    known = cli_flags() | set().union(*OTHER_TOOLS.values())
    seen: set[str] = set()
    unknown = []
    for path in doc_files():
        flags = named_flags(path.read_text(encoding="utf-8"))
        seen |= flags
        unknown += [f"{path.relative_to(ROOT)}: {f}" for f in sorted(flags - known)]
    assert not unknown, "flags the docs name that no tcdoctor command has:\n" + "\n".join(unknown)
    assert {"--threads", "--backend", "--fix-budget", "--nproc"} <= seen  # the docs were read


def test_other_tools_flags_are_not_ours():
    """An allow-listed flag that tcdoctor gains is checked against click instead."""
    assert not (set().union(*OTHER_TOOLS.values()) & cli_flags())


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def _ci_test_command() -> str:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    i = ci.index("# README test command:")
    return ci[i + 1].strip()


def test_readme_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    commands = [line[4:] for line in readme if line.startswith("    python3 -m venv")]
    test_cmd = _ci_test_command()
    assert test_cmd in commands, "README's test command differs from .ci/run's"
    # the install + analyse command installs the same way, without the test extra
    venv, torch_pin, *_ = test_cmd.split(" && ")
    (analyse,) = [c for c in commands if c != test_cmd]
    steps = analyse.split(" && ")
    assert steps[:3] == [venv, torch_pin, ".venv/bin/pip install -e . torch==2.13.0"]
    assert steps[3].startswith(".venv/bin/tcdoctor analyze ")
    path, func = steps[3].split()[-1].split(":")
    assert re.search(rf"^def {func}\(\):", (ROOT / path).read_text(encoding="utf-8"), re.M)
    text = "\n".join(readme)
    assert "torch==2.13.0" in text and "unpinned" in text  # the pin and why


def test_contributing_maps_every_test_file_to_a_package():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = text[text.index("### Which tests cover which package") :].split("\n## ")[0]
    named = set(re.findall(r"`(test_\w+)`", table))
    files = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    assert files - named == set(), "add these test files to CONTRIBUTING.md's map"
    assert named - files == set(), "CONTRIBUTING.md's map names test files that do not exist"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_resolve():
    broken = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
            if not dest.exists():
                broken.append(f"{path.relative_to(ROOT)}: {rel}")
                continue
            if anchor:
                headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.M)
                if anchor not in {_anchor(h) for h in headings}:
                    broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    missing = sorted(p for p in pages if f"]({p})" not in index)
    assert not missing, f"docs/README.md does not list {missing}"


def test_verdict_table_is_rules():
    """docs/verdict.md's threshold table gives each threshold (a `Rules` field) its value."""
    text = (ROOT / "docs" / "verdict.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\|[^|]+\| `(\w+)` \| ([^|]+) \|$", text, re.M))
    rules = RULES.to_dict()
    assert set(rows) == set(rules)
    for key, cell in rows.items():
        number = float(re.match(r"[\d,.]+", cell.strip()).group().replace(",", ""))
        value = number / 100 if "%" in cell else number
        assert abs(value - rules[key]) < 1e-9, f"{key}: docs say {cell.strip()}, RULES {rules[key]}"


def test_verdict_prose_defaults_are_the_declared_ones():
    """The defaults docs/verdict.md gives in its prose (the fix budget, when the compile remedies
    start) are the declared constants, as its table is RULES."""
    from tcdoctor.options import FIX_BUDGET_FIRST_CALLS, FIX_BUDGET_MIN_S

    text = " ".join((ROOT / "docs" / "verdict.md").read_text(encoding="utf-8").split())
    budget = (
        f"default {FIX_BUDGET_FIRST_CALLS} × the cold first call, at least {FIX_BUDGET_MIN_S:g} s"
    )
    assert budget in text
    assert f"automatic when the cold first call exceeds {RULES.compile_seconds_warn:g} s" in text
