"""Known graph breaks: an allow-list file of accepted breaks, and the comparison against it.

A known-breaks file lists the graph breaks a team accepts, each with a reason. Comparing a run's
graph breaks (probes/graph_breaks.py findings, or a saved report's `graph_breaks.unique`) against it
gives new breaks (not listed, or more occurrences than listed: a gate fails) and stale entries (a
listed break that no longer occurs, or fewer times: a gate fails unless stale entries are allowed).
`updated` refreshes the list from a run, keeping each entry's reason. Used by `tcdoctor check
--known-breaks` (checks/judges.py), `tcdoctor.testing.assert_compiles(known_breaks=...)` and the
pytest plugin's `compiles` marker.

The file is TOML (`.toml`; read with the standard library's tomllib, Python 3.11+, else the
`tomli` package) or JSON (any other extension): a `version` (1) and a list `breaks`, each entry

    file      the break's file: relative to the known-breaks file's own folder, a library file as
              its path inside site-packages (`torch/nn/modules/module.py`), else absolute
    function  the function's qualified name (`Net.forward`), read from the source where it can be
              (a bare name, `forward`, matches too)
    kind      PyTorch's graph-break id (`GB0025`), or its gb_type text where the break has no id
    count     how many times the break occurs in one run (its occurrences, summed over the
              breaks at that file, function and kind)
    reason    why it is accepted (required, not empty)
    line      where it was when the entry was written: for information, never matched
    gb_type   PyTorch's gb_type text: for information, never matched

Method: a break matches an entry when its function and kind match and its file matches: resolved
against the known-breaks file's folder to the same path, or else the entry's path parts are the
tail of the break's (a report analysed in another checkout, `/home/runner/work/p/p/models/m.py`
matches `models/m.py`); a break matching several entries goes to the most specific file. The
line is not matched, so an edit above a break does not make it new. Breaks in code the user did
not write (a library's, PyTorch's) are compared like the user's own: a list may accept them.

Pitfalls: the count is of occurrences in one run of the same calls; a break that a recompile
traces again counts again, so a list written with some input variants is judged with the same
ones. A file is owned by one test or one gate: two users of one file would each see the other's
entries as stale.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .. import pysource
from ..errors import UsageError

VERSION = 1
PLACEHOLDER = "TODO: why this break is accepted"
FIELDS = ("file", "function", "kind", "count", "reason", "line", "gb_type")
REQUIRED = ("file", "function", "kind", "count", "reason")

# The JSON Schema of a known-breaks file (TOML read as the same object). `load` checks the same rules.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tcdoctor known graph breaks",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "version": {"const": VERSION},
        "breaks": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": list(REQUIRED),
                "properties": {
                    "file": {"type": "string", "minLength": 1},
                    "function": {"type": "string", "minLength": 1},
                    "kind": {"type": "string", "minLength": 1},
                    "count": {"type": "integer", "minimum": 1},
                    "reason": {"type": "string", "pattern": r"\S"},
                    "line": {"type": "integer", "minimum": 1},
                    "gb_type": {"type": "string"},
                },
            },
        },
    },
}


class KnownBreaksError(UsageError):
    """A known-breaks file that cannot be read or breaks the format (exit 2)."""


@dataclass(frozen=True)
class KnownBreak:
    """One entry of the file."""

    file: str
    function: str
    kind: str
    count: int
    reason: str
    line: int | None = None
    gb_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FIELDS if getattr(self, k) is not None}

    @property
    def label(self) -> str:
        return f"{self.file} {self.function} {self.kind}"


@dataclass(frozen=True)
class Seen:
    """One graph break of a run, as compared: its keys and where it is."""

    file: str | None  # as the finding has it (absolute, usually)
    line: int | None
    name: str  # the function's bare name (a resumed function named after its original)
    qualname: str | None  # read from the source; None when it cannot be
    gb_id: str | None
    reason: str | None  # PyTorch's gb_type
    occurrences: int

    @property
    def function(self) -> str:
        return self.qualname or self.name

    @property
    def kind(self) -> str:
        return self.gb_id or self.reason or "?"

    def where(self) -> str:
        return where(self.file, self.line)

    def text(self) -> str:
        ident = f" [{self.gb_id}]" if self.gb_id else ""
        return f"{self.where()} in {self.function}: {self.reason or '?'}{ident}"


@dataclass(frozen=True)
class Excess:
    """Breaks of one kind beyond what the file allows: not listed (`entry` None), or more
    occurrences than the entry's count."""

    breaks: tuple[Seen, ...]
    entry: KnownBreak | None
    seen: int

    def line(self, path: str) -> str:
        first = self.breaks[0]
        if self.entry is None:
            times = f" ({self.seen} times)" if self.seen > 1 else ""
            return f"new graph break at {first.text()}{times}: not in {path}"
        return f"graph break at {first.text()}: {self.seen} times, {path} lists {self.entry.count}"


@dataclass(frozen=True)
class Stale:
    """An entry that occurs fewer times than listed (0: not at all)."""

    entry: KnownBreak
    seen: int

    def line(self, path: str) -> str:
        e = self.entry
        at = f" (line {e.line})" if e.line else ""
        return (
            f"stale known break in {path}: {e.label}{at} listed {e.count}, seen {self.seen} "
            f"(reason was: {e.reason})"
        )


@dataclass(frozen=True)
class Comparison:
    """A run's breaks against the file: `new` and `stale` as above, `matched` entry -> breaks."""

    path: str
    new: list[Excess] = field(default_factory=list)
    stale: list[Stale] = field(default_factory=list)
    matched: dict[int, list[Seen]] = field(default_factory=dict)
    placeholders: int = 0

    def failed(self, allow_stale: bool = False) -> bool:
        return bool(self.new) or (bool(self.stale) and not allow_stale)

    def lines(self, allow_stale: bool = False) -> list[str]:
        """One line per new break, then per stale entry (marked allowed with allow_stale)."""
        out = [n.line(self.path) for n in self.new]
        suffix = " (allowed)" if allow_stale else ""
        out += [s.line(self.path) + suffix for s in self.stale]
        return out

    def summary(self, allow_stale: bool = False) -> str:
        listed = sum(len(v) > 0 for v in self.matched.values())
        parts = [f"{len(self.new)} new", f"{len(self.stale)} stale"]
        if allow_stale and self.stale:
            parts[-1] += " (allowed)"
        text = f"{', '.join(parts)} against {self.path} ({listed} listed break(s) seen)"
        if self.placeholders:
            text += f"; {self.placeholders} entr{'y' if self.placeholders == 1 else 'ies'} still with the placeholder reason"
        return text


# Reading and writing the file.


def load(path: str | os.PathLike) -> list[KnownBreak]:
    """The entries of a known-breaks file; KnownBreaksError (one line) when it cannot be read or
    breaks the format. A missing file is an error (`update` creates one)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise KnownBreaksError(f"known breaks {path}: {exc.strerror or exc}") from None
    try:
        data = _toml_loads(raw.decode("utf-8")) if _is_toml(path) else json.loads(raw)
    except KnownBreaksError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse error is one line
        raise KnownBreaksError(f"known breaks {path}: cannot be read: {exc}") from None
    return entries_from(data, path)


def entries_from(data: Any, path: str = "known breaks") -> list[KnownBreak]:
    """Validate a parsed file (the rules of SCHEMA) and return its entries."""

    def bad(why: str) -> KnownBreaksError:
        return KnownBreaksError(f"{path}: {why}")

    if not isinstance(data, dict):
        raise bad("not a table of `version` and `breaks`")
    unknown = sorted(set(data) - {"version", "breaks"})
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)} (expected version, breaks)")
    if data.get("version", VERSION) != VERSION:
        raise bad(f"version {data.get('version')!r} (this tcdoctor reads version {VERSION})")
    items = data.get("breaks", [])
    if not isinstance(items, list):
        raise bad("`breaks` is not a list")
    out = []
    for i, item in enumerate(items, 1):
        at = f"break {i}"
        if not isinstance(item, dict):
            raise bad(f"{at} is not a table")
        extra = sorted(set(item) - set(FIELDS))
        if extra:
            raise bad(f"{at}: unknown key(s) {', '.join(extra)} (keys: {', '.join(FIELDS)})")
        missing = [k for k in REQUIRED if k not in item]
        if missing:
            raise bad(f"{at}: missing {', '.join(missing)}")
        for k in ("file", "function", "kind", "reason"):
            if not isinstance(item[k], str) or not item[k].strip():
                raise bad(f"{at}: {k} must be a non-empty string")
        for k in ("count", "line"):
            v = item.get(k)
            if k in item and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise bad(f"{at}: {k} must be an integer >= 1, got {v!r}")
        if "gb_type" in item and not isinstance(item["gb_type"], str):
            raise bad(f"{at}: gb_type must be a string")
        out.append(KnownBreak(**{k: item[k] for k in FIELDS if k in item}))
    return out


def dumps(entries: Iterable[KnownBreak], toml: bool = True) -> str:
    """The file's text: TOML (a header comment, then one [[breaks]] table per entry) or JSON."""
    data = [e.to_dict() for e in entries]
    if not toml:
        return json.dumps({"version": VERSION, "breaks": data}, indent=2, ensure_ascii=False) + "\n"
    lines = [
        "# tcdoctor known graph breaks (docs/api.md): a break not listed here, or more times than",
        "# `count`, fails; a listed one that no longer occurs is stale. `line` and `gb_type` are",
        "# for information; `file` is relative to this file's folder.",
        f"version = {VERSION}",
    ]
    for d in data:
        lines += ["", "[[breaks]]"] + [f"{k} = {_toml_value(v)}" for k, v in d.items()]
    return "\n".join(lines) + "\n"


def write(path: str | os.PathLike, entries: Iterable[KnownBreak]) -> None:
    """Write the file atomically (temporary file beside it, then a rename): a reader, or another
    pytest-xdist worker, never sees half a file. TOML for `.toml`, else JSON."""
    from ..report.files import write_atomic

    path = os.fspath(path)
    try:
        write_atomic(path, dumps(entries, toml=_is_toml(path)))
    except OSError as exc:
        raise KnownBreaksError(f"known breaks {path}: cannot be written: {exc}") from None


def _is_toml(path: str) -> bool:
    return path.lower().endswith(".toml")


def _toml_loads(text: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise KnownBreaksError(
                "a .toml known-breaks file needs Python 3.11 or the tomli package: "
                "install tomli, or write the file as JSON (.json)"
            ) from None
    return tomllib.loads(text)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"not a known-breaks value: {v!r}")
    if isinstance(v, int):
        return str(v)
    # a TOML basic string: JSON's escapes are TOML's; DEL must be escaped too
    return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")


# Comparing.


def seen_breaks(findings: Iterable[Any]) -> list[Seen]:
    """The run's breaks from findings: dicts (assert_compiles, probes) or a report's GraphBreak
    records."""
    out = []
    for f in findings:
        file, line = _get(f, "file"), _get(f, "line")
        name = _bare(_get(f, "function"))
        out.append(
            Seen(
                file=file,
                line=line,
                name=name,
                qualname=qualname(file, line, name) if file and line else None,
                gb_id=_get(f, "gb_id"),
                reason=_get(f, "reason"),
                occurrences=int(_get(f, "occurrences") or 1),
            )
        )
    return out


def compare(entries: list[KnownBreak], findings: Iterable[Any], path: str) -> Comparison:
    """The run's breaks against the entries of the file at `path` (its folder anchors the entries'
    relative files)."""
    base = os.path.dirname(os.path.abspath(path))
    matched: dict[int, list[Seen]] = {i: [] for i in range(len(entries))}
    unlisted: dict[tuple, list[Seen]] = {}
    for b in seen_breaks(findings):
        i = _entry_for(b, entries, base)
        if i is None:
            unlisted.setdefault((file_key(b.file, base), b.function, b.kind), []).append(b)
        else:
            matched[i].append(b)
    new = [Excess(tuple(bs), None, sum(b.occurrences for b in bs)) for bs in unlisted.values()]
    stale = []
    for i, e in enumerate(entries):
        seen = sum(b.occurrences for b in matched[i])
        if seen > e.count:
            new.append(Excess(tuple(matched[i]), e, seen))
        elif seen < e.count:
            stale.append(Stale(e, seen))
    placeholders = sum(e.reason.strip() == PLACEHOLDER for e in entries)
    return Comparison(path, new, stale, matched, placeholders)


def updated(entries: list[KnownBreak], findings: Iterable[Any], path: str) -> list[KnownBreak]:
    """The file refreshed from a run: each entry still seen keeps its reason (count and line
    refreshed), entries no longer seen are dropped, breaks not listed are added with the
    PLACEHOLDER reason, which the user must edit."""
    base = os.path.dirname(os.path.abspath(path))
    cmp = compare(entries, findings, path)
    out = []
    for i, e in enumerate(entries):
        bs = cmp.matched[i]
        if bs:
            first = min(bs, key=lambda b: b.line or 0)
            out.append(replace(e, count=sum(b.occurrences for b in bs), line=first.line))
    for n in cmp.new:
        if n.entry is None:
            first = min(n.breaks, key=lambda b: b.line or 0)
            out.append(
                KnownBreak(
                    file=file_key(first.file, base),
                    function=first.function,
                    kind=first.kind,
                    count=n.seen,
                    reason=PLACEHOLDER,
                    line=first.line,
                    gb_type=first.reason,
                )
            )
    return out


def file_key(file: str | None, base: str) -> str:
    """How an entry names a break's file: relative to `base` (the known-breaks file's folder) when
    the two share more than the file-system root, a library's path inside site-packages, else the
    absolute path; POSIX separators."""
    if not file:
        return "?"
    if not os.path.isabs(file):
        return file.replace(os.sep, "/")
    parts = _parts(file)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    common = os.path.commonpath([os.path.abspath(file), base])
    if os.path.dirname(common) != common:  # not the root
        return os.path.relpath(file, base).replace(os.sep, "/")
    return file.replace(os.sep, "/")


def _entry_for(b: Seen, entries: list[KnownBreak], base: str) -> int | None:
    """The entry a break counts against: function and kind equal, the best file match."""
    best, score = None, 0
    for i, e in enumerate(entries):
        if not _same_function(e.function, b) or e.kind not in (b.gb_id, b.reason):
            continue
        s = _file_score(e.file, b.file, base)
        if s > score:
            best, score = i, s
    return best


def _same_function(function: str, b: Seen) -> bool:
    if function in (b.qualname, b.name):
        return True
    return b.qualname is None and function.rsplit(".", 1)[-1] == b.name


def _file_score(entry_file: str, file: str | None, base: str) -> int:
    """0: not this file; else how specific the match is (the same resolved path beats a tail)."""
    if not file:
        return 1000 if entry_file == "?" else 0
    if os.path.isabs(file) and os.path.normpath(os.path.join(base, entry_file)) == os.path.normpath(
        file
    ):
        return 1000
    mine = [p for p in entry_file.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    theirs = _parts(file)
    if mine and len(mine) <= len(theirs) and theirs[-len(mine) :] == mine:
        return len(mine)
    return 0


def _parts(file: str) -> list[str]:
    return [p for p in file.replace("\\", "/").split("/") if p and p != "."]


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
_RESUMED_TEXT = re.compile(r"^(?P<fn>\S+) \(resumed after line \d+\)$")


def _bare(name: str | None) -> str:
    """A function's own name: Dynamo's resume functions (`torch_dynamo_resume_in_forward_at_14`,
    or as tcdoctor words it, `forward (resumed after line 14)`) named after the original."""
    if not name:
        return "?"
    m = _RESUME.match(name) or _RESUMED_TEXT.match(name)
    return m["fn"] if m else name


@functools.lru_cache(maxsize=256)
def _functions(file: str, mtime: float) -> tuple[tuple[int, int, int, str], ...]:
    """pysource.functions of a source file (`mtime`: the cache key, so a file edited in the same
    process is read again)."""
    del mtime
    with open(file, encoding="utf-8") as fh:
        return pysource.functions(fh.read())


def qualname(file: str | None, line: int | None, name: str | None) -> str | None:
    """The qualified name (`Net.forward`, `build.<locals>.step`) of the innermost function named
    `name` around `line` in `file`'s source; None when the source cannot be read or says nothing."""
    if not file or not line or not name:
        return None
    try:
        fns = _functions(file, os.path.getmtime(file))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    inner = [f for f in fns if f[0] <= line <= f[2] and f[3].rsplit(".", 1)[-1] == name]
    return max(inner, key=lambda f: f[0])[3] if inner else None


def where(file: str | None, line: int | None) -> str:
    """file:line, relative to the working directory when the file is under it (as pytest shows)."""
    if not file:
        return "?"
    shown = file
    if os.path.isabs(file):
        try:
            rel = os.path.relpath(file)
            shown = file if rel.startswith("..") else rel
        except ValueError:  # another drive (Windows)
            pass
    return f"{shown}:{line}" if line else shown


def _get(f: Any, key: str) -> Any:
    return f.get(key) if isinstance(f, dict) else getattr(f, key, None)
