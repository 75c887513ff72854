"""tcdoctor's pytest plugin: the `compiles` marker and fixture around `assert_compiles`.

Registered through the `pytest11` entry point (pyproject.toml), so it loads wherever tcdoctor is
installed; `-p tcdoctor.pytest_plugin` loads it where entry points are off.

    @pytest.mark.compiles(known_breaks="known_breaks.toml", max_recompiles=0)
    def test_net_compiles(compiles):
        compiles(Net(), torch.randn(4, 8), variants=[(torch.randn(8, 8),)])

The fixture `compiles` is `tcdoctor.testing.assert_compiles` with the marker's keyword arguments
as defaults (a call's own keyword arguments win, except `known_breaks`, which only the marker
names). `known_breaks` is a path relative to the test file's folder; the entries' files are
relative to the known-breaks file's own folder (checks/known_breaks.py). The option
`--tcdoctor-update-known-breaks` rewrites each known-breaks file a test uses from what that test
saw (reasons kept; new entries get a placeholder reason, named in a warning, that you must edit).

Method and pitfalls: the plugin imports neither torch nor tcdoctor's analysis at import, adds one
option and one marker, and adds work only for tests that carry the marker or use the fixture (a
marker lookup per collected test). A known-breaks file belongs to one test: two tests naming the
same file would see each other's entries as stale and, updating, overwrite each other's; the
plugin refuses that at collection. Every pytest-xdist worker collects the whole suite, so each
refuses it alike, with no state shared across workers: the one test that owns a file runs on one
worker, which writes the file atomically (a temporary file beside it, then a rename). For a
parametrized test, give each case its own file with `pytest.param(..., marks=pytest.mark.compiles(
known_breaks=...))`.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest

MARKER = "compiles"
UPDATE_OPTION = "--tcdoctor-update-known-breaks"
# what the marker may set: assert_compiles' keyword arguments (update_known_breaks is the option's)
MARKER_KEYS = (
    "max_graph_breaks",
    "max_recompiles",
    "known_breaks",
    "allow_stale",
    "backend",
    "compile_kwargs",
    "kwargs",
    "variants",
)


class KnownBreaksUpdated(UserWarning):
    """`--tcdoctor-update-known-breaks` rewrote a known-breaks file."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tcdoctor")
    group.addoption(
        UPDATE_OPTION,
        action="store_true",
        default=False,
        dest="tcdoctor_update_known_breaks",
        help="tcdoctor: rewrite the known-breaks file of each test marked "
        "@pytest.mark.compiles(known_breaks=...) from what the test saw (reasons kept).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "compiles(max_graph_breaks=None, max_recompiles=0, known_breaks=None, allow_stale=False, "
        "backend='eager', ...): defaults of tcdoctor's `compiles` fixture (tcdoctor.testing."
        "assert_compiles); known_breaks is relative to the test file's folder",
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Refuse a marked test that does not use the fixture, a marker with an unknown argument, and
    two tests that name the same known-breaks file."""
    owners: dict[str, str] = {}
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        kw = _marker_kwargs(marker, item)
        if MARKER not in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(
                f"{item.nodeid}: marked @pytest.mark.compiles but does not use the `compiles` "
                "fixture (call compiles(model, *inputs) in the test)"
            )
        path = kw.get("known_breaks")
        if path is not None:
            if path in owners:
                raise pytest.UsageError(
                    f"{item.nodeid} and {owners[path]} both use known breaks {path}: a "
                    "known-breaks file belongs to one test (give each its own file)"
                )
            owners[path] = item.nodeid


def _marker_kwargs(marker: Any, item: Any) -> dict[str, Any]:
    """The marker's keyword arguments, `known_breaks` resolved against the test file's folder."""
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.compiles takes keyword arguments only ({', '.join(MARKER_KEYS)})"
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
    if unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.compiles got unknown argument(s) {', '.join(unknown)} "
            f"(arguments: {', '.join(MARKER_KEYS)})"
        )
    kw = dict(marker.kwargs)
    if kw.get("known_breaks") is not None:
        folder = os.path.dirname(os.fspath(item.path))
        kw["known_breaks"] = os.path.normpath(os.path.join(folder, os.fspath(kw["known_breaks"])))
    return kw


@pytest.fixture
def compiles(request: pytest.FixtureRequest) -> Any:
    """`compiles(model, *inputs, **kwargs)`: `tcdoctor.testing.assert_compiles` with the
    `compiles` marker's arguments as defaults; returns its CompileRecord."""
    defaults = _marker_kwargs(request.node.get_closest_marker(MARKER), request.node)
    update = bool(request.config.getoption("tcdoctor_update_known_breaks"))

    def check(model: Any, *inputs: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if "known_breaks" in kwargs or "update_known_breaks" in kwargs:
            raise TypeError(
                "known_breaks is given in @pytest.mark.compiles(known_breaks=...), and updated "
                f"with {UPDATE_OPTION}: not in the fixture's call"
            )
        from .testing import assert_compiles

        kw = {**defaults, **kwargs}
        path = kw.get("known_breaks")
        if path is None or not update:
            return assert_compiles(model, *inputs, **kw)
        before = _text(path)
        try:
            return assert_compiles(model, *inputs, update_known_breaks=True, **kw)
        finally:
            after = _text(path)
            if after is not None and after != before:
                _warn_updated(path, after)

    return check


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def _warn_updated(path: str, text: str) -> None:
    from .checks.known_breaks import PLACEHOLDER

    todo = text.count(PLACEHOLDER)
    edit = f"; {todo} entr{'y' if todo == 1 else 'ies'} with reason {PLACEHOLDER!r}: edit them" * (
        todo > 0
    )
    warnings.warn(KnownBreaksUpdated(f"tcdoctor: updated known breaks {path}{edit}"), stacklevel=2)
