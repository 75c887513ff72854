"""The verdict's thresholds (`tcdoctor/thresholds.py`): one frozen `Rules`, changed only by
`replace`, stored in a report as the same JSON object as before it existed. No model runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tcdoctor.report.model import Report
from tcdoctor.thresholds import HORIZONS, RULES, Rules
from tcdoctor.verdict import decide

DATA = Path(__file__).parent / "data"


def _stored_rules() -> list[tuple[str, dict]]:
    """(file, verdict.rules) of every saved report in tests/data that carries a verdict's rules."""
    out = []
    for path in sorted(DATA.rglob("*.json")):
        rules = (json.loads(path.read_text(encoding="utf-8")).get("verdict") or {}).get("rules")
        if rules:
            out.append((str(path.relative_to(DATA)), rules))
    return out


STORED = _stored_rules()


def test_rules_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RULES.min_speedup = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        HORIZONS["a week"] = 7  # type: ignore[index]


def test_replace_changes_one_threshold_and_rejects_an_unknown_name():
    strict = RULES.replace(min_speedup=1.5, expected_calls=1_000)
    assert (strict.min_speedup, strict.expected_calls) == (1.5, 1_000)
    assert RULES.min_speedup == 1.02 and RULES.expected_calls == 100_000  # the defaults untouched
    assert strict.equivalence_margin == RULES.equivalence_margin
    with pytest.raises(TypeError, match="not a threshold: min_speedups"):
        RULES.replace(min_speedups=1.5)  # a typo is an error, never a silently unused key


def test_some_saved_reports_carry_every_threshold_and_some_predate_a_few():
    # the round trip below is only a test if both kinds of file are there
    assert any(set(r) == set(Rules.names()) for _, r in STORED)
    assert any(set(r) < set(Rules.names()) for _, r in STORED)


@pytest.mark.parametrize("name, stored", STORED, ids=[n for n, _ in STORED])
def test_to_dict_and_from_dict_round_trip_the_saved_reports_rules(name, stored):
    back = Rules.from_dict(stored)
    # what the file holds comes back as it was, and a threshold it predates takes its default
    assert back.to_dict() == {**RULES.to_dict(), **stored}
    if set(stored) == set(Rules.names()):
        # the same JSON, key order and ints included (the values are the defaults of the day it was
        # written: gain_bound_spread's changed since, 1.6 -> 1.4, when the gain became a share)
        assert json.dumps(back.to_dict()) == json.dumps(stored)
        assert list(stored) == list(RULES.to_dict())
        assert {k for k, v in stored.items() if v != getattr(RULES, k)} <= {"gain_bound_spread"}


def test_from_dict_ignores_a_key_it_does_not_know():
    assert Rules.from_dict({"a_later_threshold": 3, "min_speedup": 1.1}) == RULES.replace(
        min_speedup=1.1
    )
    assert Rules.from_dict(None) == Rules.from_dict({}) == RULES


def test_the_verdict_stores_the_rules_it_judged_with():
    report = Report.load(str(DATA / "schema1_gate_base.json"))
    v = decide(report, expected_calls=1_000, min_speedup=1.3)
    assert v.rules == RULES.replace(expected_calls=1_000, min_speedup=1.3).to_dict()
    assert Rules.from_dict(v.rules).expected_calls == v.break_even["expected_calls"] == 1_000
    assert decide(report).rules == RULES.to_dict()
