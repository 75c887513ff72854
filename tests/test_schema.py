"""The report's published JSON Schema: generated from the section classes (report/record.py), shipped
in the package (report/report.schema.json, printed by `tcdoctor schema`), every saved report in
tests/ valid against it (checked with `jsonschema`, an independent validator), and `Report.load`
refusing a file of the wrong types with one line and exit 2. No model runs."""

from __future__ import annotations

import glob
import json
import os

import jsonschema
import pytest
from conftest import ROOT

from tcdoctor.errors import ReportError
from tcdoctor.report.model import Report, report_schema, schema_text, shipped_schema_text
from tcdoctor.report.record import mismatch

DATA = os.path.join(ROOT, "tests", "data")
SAVED = sorted(
    glob.glob(os.path.join(DATA, "*.json")) + glob.glob(os.path.join(DATA, "golden", "*.json"))
)
REGENERATE = (
    'python -c "from tcdoctor.report.model import schema_text; '
    "open('tcdoctor/report/report.schema.json', 'w').write(schema_text())\""
)


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(shipped_schema_text()))


def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def test_the_shipped_schema_is_what_the_classes_generate():
    assert shipped_schema_text() == schema_text(), f"regenerate it: {REGENERATE}"


def test_the_schema_is_a_valid_draft_2020_12_schema_of_every_section():
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    defs = schema["$defs"]
    for name in ("Runtime", "Timing", "GraphBreak", "StrategyRow", "RemedyRow", "Distributed"):
        assert defs[name]["type"] == "object"
    # keys no field models are kept in `extra`, so every section allows them
    assert all(d.get("additionalProperties") is True for d in defs.values() if "type" in d)
    # a derived key is described by its property's return type, read-only
    assert defs["Guards"]["properties"]["overhead_fraction"] == {
        "$ref": "#/$defs/Float",
        "readOnly": True,
    }
    assert schema["required"] == ["schema_version"]


@pytest.mark.parametrize("path", SAVED, ids=os.path.basename)
def test_every_saved_report_in_the_tests_is_valid(path):
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in _validator().iter_errors(_load(path))
    ]
    assert errors == []
    assert Report.load(path).to_dict()  # and loads


def test_there_are_saved_reports_to_check():
    names = {os.path.basename(p) for p in SAVED}
    assert {"schema1_two_breaks.json", "distributed_two_ranks.json"} <= names and len(names) >= 3


def test_a_report_written_back_is_valid():
    for path in SAVED:
        assert not list(_validator().iter_errors(json.loads(Report.load(path).to_json())))


def _leaves(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, path + (i,))
    else:
        yield path, x


def _firsts(x):
    """`x` with every list cut to its first two items, the ones the wrong-type test replaces."""
    if isinstance(x, dict):
        return {k: _firsts(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_firsts(v) for v in x[:2]]
    return x


def test_the_loaders_check_agrees_with_jsonschema_on_every_wrong_type():
    """Each leaf of each saved report (the first two items of a list) replaced by a value of another
    type: the loader's own check (report/record.py `mismatch`) accepts exactly what jsonschema
    accepts. One top-level section at a time, its lists cut to the two items replaced, so jsonschema
    has little to walk: both checks read the same document, and the schema bounds no list's length
    (a saved generation report's serving section, 4,057 leaves, took 84 ms a validation whole: the
    test ran 992 s at load 6)."""
    validator, schema = _validator(), report_schema()
    assert '"minItems"' not in shipped_schema_text() and '"maxItems"' not in shipped_schema_text()
    tried = rejected = 0
    for saved in SAVED:
        for key, section in _load(saved).items():
            data = {"schema_version": 1, key: _firsts(section)}
            for path, value in list(_leaves(data)):
                parent = data
                for p in path[:-1]:
                    parent = parent[p]
                for wrong in ("x", [1], True, None):
                    if wrong == value and type(wrong) is type(value):
                        continue
                    parent[path[-1]] = wrong
                    valid = validator.is_valid(data)
                    assert (mismatch(schema, data) is None) == valid, (saved, path, wrong)
                    tried, rejected = tried + 1, rejected + (not valid)
                parent[path[-1]] = value
    # the check can fail: hundreds of the replacements are wrong types (the rest sit in free-form
    # dicts, or put null where null is allowed)
    assert tried > 1000 and rejected > 500, (tried, rejected)


def test_keys_a_section_does_not_model_are_valid_and_kept():
    data = _load(SAVED[0])
    data["runtime"]["from_a_newer_probe"] = {"x": 1}
    data["a_newer_section"] = [1, 2]
    assert _validator().is_valid(data) and mismatch(report_schema(), data) is None
    rep = Report.from_dict(data)
    assert rep.runtime.extra["from_a_newer_probe"] == {"x": 1}
    assert rep.extra["a_newer_section"] == [1, 2]


def test_a_records_first_positional_argument_is_its_first_field_never_extra():
    from tcdoctor.report.sections import GraphBreak

    b = GraphBreak("B1", "a reason")  # before, "B1" went to `extra` and "a reason" to `id`
    assert (b.id, b.reason, b.extra) == ("B1", "a reason", {})
    assert b.to_dict()["id"] == "B1"


def test_infinities_and_nan_as_the_encoder_writes_them_are_valid():
    data = _load(SAVED[0])
    data["numerics"]["max_rel_err"] = "inf"
    data["verdict"]["rules"]["min_speedup"] = None  # a NaN, in a float that is never None
    assert _validator().is_valid(data) and mismatch(report_schema(), data) is None
    data["numerics"]["max_rel_err"] = "infinite"
    assert not _validator().is_valid(data)
    assert mismatch(report_schema(), data).startswith("numerics.max_rel_err is a string")


@pytest.mark.parametrize(
    "section,expected",
    [
        (
            {"runtime": {"speedup": "fast", "speedup_ci": "ab"}},
            "runtime.speedup is a string ('fast'); expected a number, 'inf', '-inf' or null",
        ),
        (
            {"graph_breaks": {"unique": [{"line": "12"}]}},
            "graph_breaks.unique[0].line is a string ('12'); expected an integer or null",
        ),
        (
            {"strategies": {"modes": {"default": 1}}},
            "strategies.modes is an object ({'default': 1}); expected a list",
        ),
        ({"schema_version": "1"}, "schema_version is a string ('1'); expected an integer"),
        (  # inside an optional section: the key inside, not the section, is named
            {"distributed": {"ranks": [{"rank": "zero"}]}},
            "distributed.ranks[0].rank is a string ('zero'); expected an integer or null",
        ),
        (
            {"ablation": [1]},
            "ablation is a list ([1]); expected an object (Ablation) or null",
        ),
    ],
)
def test_load_refuses_wrong_types_naming_the_key_and_the_type(tmp_path, section, expected):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1, **section}))
    with pytest.raises(ReportError) as exc:
        Report.load(str(bad))
    assert exc.value.message == f"{bad} is not a valid tcdoctor report: {expected}"


def test_report_on_a_malformed_file_exits_2_with_one_line(cli, tmp_path):
    (tmp_path / "bad.json").write_text(
        json.dumps({"schema_version": 1, "runtime": {"speedup": "fast", "speedup_ci": "ab"}})
    )
    rc, out, err = cli("report", "bad.json")
    assert rc == 2 and out == ""
    assert err == (
        "tcdoctor: error: bad.json is not a valid tcdoctor report: runtime.speedup is a string "
        "('fast'); expected a number, 'inf', '-inf' or null\n"
    )
    # the same file with the right types renders (the control)
    (tmp_path / "good.json").write_text(
        json.dumps({"schema_version": 1, "runtime": {"speedup": 1.5, "speedup_ci": [1.2, 1.8]}})
    )
    rc, out, err = cli("report", "good.json")
    assert rc == 0 and "1.50×" in out, err


def test_the_schema_command_prints_the_shipped_schema(cli):
    rc, out, err = cli("schema")
    assert rc == 0, err
    assert out == shipped_schema_text() and json.loads(out) == report_schema()
