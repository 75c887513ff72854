"""The report formats as data, and which of them a command writes where.

Each format is one `Format` in `FORMATS`: its key (which is its flag `--KEY`, its parameter
`KEY_path` and a sweep's file extension, `report.KEY`), its label ('JSON') and its renderer. The
command line's output flags are made from it (commands/flags.py `output_params`), and `Outputs`,
built once from those flags, is the one value handed on to the writer (write.py), whatever writes
(analyze, report, merge, check, diff, a sweep's targets and its overview). A new format is a
renderer and one `register` call: every command that writes reports has its flag, every sweep
target and overview its file, and a gate's JUnit file its link.

Pitfalls: a renderer takes the subject (a `Report`, a sweep's `Sweep` or a `Diff`) and the path
it will be written to (the HTML report's local links are made relative to that folder); it
returns the text and never writes (write.py renders every file before writing any).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Format:
    """One output format: `key` (its flag `--KEY`, parameter `KEY_path`, a sweep's `report.KEY`),
    `label` ('JSON': 'JSON report', 'JSON diff'), `render(subject, path)` its text."""

    key: str
    label: str
    render: Callable[[Any, str], str]

    @property
    def flag(self) -> str:
        return f"--{self.key}"

    @property
    def param(self) -> str:
        return f"{self.key}_path"


def _drawn(renderer: Any, subject: Any) -> str:
    """A report, a sweep's overview or a diff, drawn by an outline renderer (render/base.py)."""
    from ..report.diff import Diff
    from ..report.sweep import Sweep

    if isinstance(subject, Sweep):
        return renderer.render_sweep(subject)
    if isinstance(subject, Diff):
        return renderer.render_diff(subject)
    return renderer.render(subject)


def _json(subject: Any, path: str) -> str:
    return subject.to_json()


def _html(subject: Any, path: str) -> str:
    from .html import HtmlRenderer

    return _drawn(HtmlRenderer(base_dir=os.path.dirname(os.path.abspath(path))), subject)


def _markdown(subject: Any, path: str) -> str:
    from .markdown import MarkdownRenderer

    return _drawn(MarkdownRenderer(), subject)


FORMATS: list[Format] = [
    Format("json", "JSON", _json),
    Format("html", "HTML", _html),
    Format("md", "Markdown", _markdown),
]


def register(fmt: Format) -> None:
    """Add a format (after the others, in files and --help), or replace the one of its key."""
    FORMATS[:] = [f for f in FORMATS if f.key != fmt.key] + [fmt]


@dataclass(frozen=True)
class Outputs:
    """Where a command's results go: `paths`, the path of each format asked for (by key; an empty
    or None path is not asked for); `beside`, the files written beside the report when it has one
    (write.py `COMPANIONS`' keys: 'patches', 'warmup', 'repro'); `named_in`, the folder the files
    will be read from when that is not where they are written (a Ray sweep's driver folder): the
    report names its companions' paths there."""

    paths: Mapping[str, str] = field(default_factory=dict)
    beside: tuple[str, ...] = ()
    named_in: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", {k: v for k, v in self.paths.items() if v})

    @classmethod
    def of(cls, beside: tuple[str, ...] = (), **paths: str | None) -> Outputs:
        """`Outputs.of(json="r.json", md="r.md")`."""
        return cls(paths, beside)  # type: ignore[arg-type]

    @classmethod
    def take(cls, kw: dict[str, Any], beside: tuple[str, ...] = ()) -> Outputs:
        """The output flags' values removed from a command's parsed values (`KEY_path`)."""
        return cls({f.key: kw.pop(f.param) for f in FORMATS if f.param in kw}, beside)

    @classmethod
    def in_folder(cls, folder: str, stem: str, beside: tuple[str, ...] = ()) -> Outputs:
        """Every format as `folder/stem.KEY` (a sweep's target, its overview)."""
        return cls({f.key: os.path.join(folder, f"{stem}.{f.key}") for f in FORMATS}, beside)

    def chosen(self) -> list[tuple[Format, str]]:
        """The formats asked for, in `FORMATS` order, each with its path."""
        return [(f, self.paths[f.key]) for f in FORMATS if f.key in self.paths]

    def beside_path(self, name: str) -> str:
        """`name` beside the JSON report (or the HTML one, or here)."""
        report = self.paths.get("json") or self.paths.get("html")
        folder = os.path.dirname(os.path.abspath(report)) if report else "."
        return os.path.join(folder, name)

    def named(self, path: str) -> str:
        """The path a report names for a file written at `path` (in `named_in` when given)."""
        if self.named_in:
            return os.path.join(self.named_in, os.path.basename(path))
        return os.path.abspath(path)
