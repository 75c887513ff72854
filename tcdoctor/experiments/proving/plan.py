"""The parent's plan (in the cold child, torch-free): which breaks get a source patch, and why the
others get none.

Method. Each graph break whose site is the user's own file (never a file under site-packages or
PyTorch) and lies in the target's folder gets the rewrite `rewrite.plan` writes for it, or the
reason there is none (listed as not tried, so a `.tolist()` loop says "no mechanical patch" and
why, and a `# tcdoctor: ignore[CODE]` says "suppressed"). A break inside a library (scipy, numpy,
any module outside torch) is planned at the user's line that calls it, where only a rule that
wraps the call (`Rule.library_calls`: a custom op) may answer; the breaks one line reaches are one
patch. A rule that needs the eager run first (`needs_observation`) is planned provisionally: its
rule and title, the patch itself written in the patch's child from what the call produced.

Pitfalls: a file outside the target's folder (or a link to one) is not tried: the copy the proof
patches would not hold it, and a diff applied from the folder could not patch it. A break reason
may be empty: it is a reason ("").
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...report.sections.breaks import GraphBreak, GraphBreaks
from ..specs import PatchFix

if TYPE_CHECKING:
    from ...outcomes import Safety
    from .. import rewrite


def rewrite_package() -> Any:
    """experiments/rewrite/, imported only where a break in the user's code is patched: libcst
    takes ~0.13 s to import, which an analysis with no such break never pays."""
    from .. import rewrite

    return rewrite


def first_line(text: str | None) -> str:
    """The first line of a message ("" for an empty one: an empty break reason is a reason)."""
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def read_source(path: str) -> tuple[bytes, str]:
    """A file's bytes and its text (UTF-8; CRLF line endings and a byte-order mark kept)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    return raw, raw.decode("utf-8")


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def diff_path(file: str, root: str) -> str:
    """The path a diff names for `file`, relative to the target's folder: a symlink's real file
    (what `git apply` and `patch` can patch)."""
    real, real_root = os.path.realpath(file), os.path.realpath(root)
    if real.startswith(real_root + os.sep):
        return os.path.relpath(real, real_root)
    return os.path.relpath(file, root)


def _library_site(f: GraphBreak) -> bool:
    """A break inside a library outside torch, reached from a line of the user's file."""
    return f.origin == "library" and f.library not in (None, "", "torch")


def breaks(results: dict) -> list[GraphBreak]:
    """The graph-break phase's unique breaks, read once as records."""
    gb = (results.get("graph_breaks") or {}).get("graph_breaks")
    return GraphBreaks.from_dict(gb).unique or []


@dataclass
class UserSite:
    """A line of the user's file that breaks start from: the break giving its reason (the user's
    own where one is), the library it calls into (None: the user's own) and every break's id."""

    brk: GraphBreak
    library: str | None
    ids: list[str] = field(default_factory=list)


def user_sites(found: list[GraphBreak]) -> list[UserSite]:
    """The graph breaks whose site is the user's own file, one per (file, line): the user's own
    breaks, and the breaks inside a library that the line calls."""
    by_line: dict[tuple, UserSite] = {}
    for f in found:
        own = f.origin == "user"
        if not (own or _library_site(f)) or not (f.line and f.file and os.path.isfile(f.file)):
            continue
        site = by_line.get((f.file, f.line))
        if site is None:
            site = by_line[(f.file, f.line)] = UserSite(f, None if own else f.library)
        elif own and site.library:  # the user's own break decides the line's reason
            site.brk, site.library = f, None
        if f.id and f.id not in site.ids:
            site.ids.append(f.id)
    return list(by_line.values())


def _site(f: GraphBreak) -> rewrite.Site:
    return rewrite_package().Site(
        line=int(f.line or 0), gb_type=f.reason or "", gb_id=f.gb_id, file=f.file
    )


@dataclass(frozen=True)
class _Planned:
    """A patch planned before any eager call: its rule, family, safety and title."""

    rule: str
    family: str
    safety: Safety
    title: str


def _provisional(source: str, site: rewrite.Site) -> _Planned | rewrite.NoRewrite:
    """The rewrite as planned before any eager call; a rule that needs the eager run first (a
    custom op's shapes) names its rule and title (the child plans it from what the call
    produced)."""
    rewrite = rewrite_package()
    planned = rewrite.plan(source, site)
    if isinstance(planned, rewrite.NoRewrite):
        need = rewrite.needs_observation(source, site)
        r = rewrite.rule(need.rule) if need is not None else None
        if r is None:
            return planned
        return _Planned(r.code, r.name, r.safety, need.title)  # type: ignore[union-attr]
    return _Planned(planned.rule, planned.family, planned.safety, planned.title)


def _wraps_calls(code: str | None) -> bool:
    """Whether the rule of `code` may patch a user's line whose call breaks inside a library."""
    r = rewrite_package().rule(code) if code else None
    return bool(r is not None and r.library_calls)


def _family_wraps_calls(family: str | None) -> bool:
    return any(r.name == family and r.library_calls for r in rewrite_package().RULES)


def _outside(path: str, root: str) -> str | None:
    """Why a file is not patched where it lies outside the target's folder (None: inside)."""
    outside = os.path.relpath(os.path.realpath(path), os.path.realpath(root)).startswith(os.pardir)
    if not (os.path.relpath(path, root).startswith(os.pardir) or outside):
        return None
    if outside and not os.path.relpath(path, root).startswith(os.pardir):
        return (
            "no patch tried: the file is a link to a file outside the target's folder, "
            "which a diff applied there cannot patch"
        )
    return "no patch tried: the file is outside the target's folder, which is what is copied"


def plan(results: dict, target: str, before: dict) -> tuple[list[PatchFix], list[dict]]:
    """Patch children for the breaks in the user's own files, and (as `fixes_not_tried` records)
    the breaks that get none, each with its reason."""
    rewrite = rewrite_package()
    root = os.path.dirname(os.path.abspath(target.rpartition(":")[0]))
    specs: list[PatchFix] = []
    none: list[dict] = []
    # every break site before (file, function, reason, line): a patch must add none
    found = breaks(results)
    sites = [dict(file=b.file, function=b.function, reason=b.reason, line=b.line) for b in found]
    for user in user_sites(found):
        f, library = user.brk, user.library
        path = os.path.abspath(str(f.file))
        common = dict(
            name=f"{os.path.relpath(path, root)}:{int(f.line or 0)}",
            target=target,
            file=path,
            at_line=int(f.line or 0),
            gb_type=f.reason or "",
            gb_id=f.gb_id,
            addresses=list(user.ids),
            before={**before, "sites": sites},
        )
        why = _outside(path, root)
        if why is not None:
            if not library:
                none.append({"spec": PatchFix(**common).to_dict(), "why": why})
            continue
        try:
            source = read_source(path)[1]
        except (OSError, UnicodeDecodeError) as exc:
            if not library:
                none.append({"spec": PatchFix(**common).to_dict(), "why": f"cannot read it: {exc}"})
            continue
        planned = _provisional(source, _site(f))
        if isinstance(planned, rewrite.NoRewrite):
            if library and not _family_wraps_calls(planned.family) and not planned.suppressed:
                continue  # a library call no rule wraps (`self.backbone(x)`): not the user's to edit
            spec = PatchFix(**common, family=planned.family or "")
            word = "suppressed" if planned.suppressed else "no mechanical patch"
            none.append({"spec": spec.to_dict(), "why": f"{word}: {planned.reason}"})
            continue
        if library and not _wraps_calls(planned.rule):
            continue
        specs.append(
            PatchFix(
                **common,
                family=planned.family,
                rule=planned.rule,
                safety=planned.safety,
                title=planned.title,
            )
        )
    return specs, none
