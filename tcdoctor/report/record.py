"""The base of every report section: a typed dataclass read from and written to JSON field by field,
the JSON Schema its fields' annotations make, and the check of a loaded file against that schema.

One source: a section's fields and their annotations (tcdoctor/report/sections/). `from_dict`
reads them, `to_dict` writes them, `json_schema` describes them, and `mismatch` checks a file against
that description, so the published schema (`tcdoctor schema`) and what `Report.load` accepts cannot
drift apart.

Round trip: `Record.from_dict(d).to_dict()` keeps every key with a value (a field named in a
class's `OMIT_NONE` is written only when set, so such a key stored as null is dropped). Keys a
section does not model yet (a newer probe's detail, a schema-1 file's leftovers) are kept in `extra`
and written back unchanged, so every section allows additional properties. Derived figures are
properties; those listed in a class's `DERIVED` are also written to the JSON (and described in the
schema by the property's return annotation), and ignored on load.

The schema's pitfalls, each the encoder's (report/encoding.py) or the loader's doing:
- JSON has no inf or NaN: a float is written as a number, "inf"/"-inf" for infinities and null for
  NaN, so every float position (`Float` in the schema) allows those three.
- a field is null only where its annotation says `| None` (a float aside, above); `from_dict` itself
  stays lenient (the children's wire dicts go through it at assembly), the check is `Report.load`'s.
- no key is required but the ones a class names in `REQUIRED` (missing fields take their default).
- `from_dict` does not check types: call `mismatch` first where the input is a file.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar


def required_fields(cls: type) -> list[str]:
    """The fields of dataclass `cls` that have no default: what a dict must hold to build one (the
    one test, for the child spec (run/spec.py) and the experiment specs (experiments/specs.py))."""
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


R = TypeVar("R", bound="Record")

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
FLOAT = {"$ref": "#/$defs/Float"}
FLOAT_DEF = {
    "description": "A float: a number, 'inf' or '-inf' for an infinity, null for NaN (JSON has "
    "neither, report/encoding.py).",
    "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf"]}, {"type": "null"}],
}


@dataclass
class Record:
    """Base of every section: typed fields named as the JSON keys, plus `extra` for the rest."""

    DERIVED: ClassVar[tuple[str, ...]] = ()  # properties written to JSON (not read back)
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()  # fields written only when set
    REQUIRED: ClassVar[tuple[str, ...]] = ()  # keys a file must have (the schema's `required`)
    # a field whose JSON key is no Python name (`class`): field name -> key, in from_dict, to_dict
    # and the schema alike
    KEYS: ClassVar[dict[str, str]] = {}

    # keyword-only: a positional call sets the first declared field, never `extra` silently
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True)

    @classmethod
    def upgrade(cls, d: dict) -> dict:
        """Older files' keys to this version's fields (default: nothing to do)."""
        return d

    @classmethod
    def from_dict(cls: type[R], d: dict | None) -> R:
        d = cls.upgrade(dict(d or {}))
        kwargs: dict[str, Any] = {}
        for name, hint in _hints(cls).items():
            key = cls.KEYS.get(name, name)
            if key in d:
                kwargs[name] = _read(hint, d.pop(key))
        for name in cls.DERIVED:
            d.pop(name, None)
        return cls(**kwargs, extra=d)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_NONE:
                continue
            out[self.KEYS.get(f.name, f.name)] = _write(value)
        for name in self.DERIVED:
            out[name] = _write(getattr(self, name))
        out.update(self.extra)
        return out

    @classmethod
    def json_schema(cls, title: str | None = None) -> dict:
        """This class as a JSON Schema document: its own object inline, every section it holds
        (and the float encoding) under `$defs`."""
        defs: dict[str, Any] = {}
        body = _object(cls, defs)
        return {
            "$schema": JSON_SCHEMA_DIALECT,
            "title": title or cls.__name__,
            **body,
            "$defs": {"Float": FLOAT_DEF, **dict(sorted(defs.items()))},
        }


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name != "extra"}


@functools.lru_cache(maxsize=None)
def _record_type(hint: Any) -> type[Record] | None:
    """The Record class in `X`, `X | None`; None for anything else (a list of records too). Cached
    by annotation: every report read asks it of every field of every section (the test suite's
    equivalence simulation builds ~100,000 records)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    for arg in typing.get_args(hint) if union else (hint,):
        if isinstance(arg, type) and issubclass(arg, Record):
            return arg
    return None


@functools.lru_cache(maxsize=None)
def _origin_args(hint: Any) -> tuple[Any, tuple]:
    """typing's (origin, args) of an annotation, cached as `_record_type` is; of `list[X]` (or
    `dict[str, X]`) for `list[X] | None` where X is a Record, which is read as that list."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[args[0] is type(None)]
        if _record_type((typing.get_args(inner) or (None,))[-1]) is not None:
            return typing.get_origin(inner), typing.get_args(inner)
    return origin, args


def _read(hint: Any, value: Any) -> Any:
    """A JSON value into the field's type; a section of the wrong shape is an error, not data."""
    if value is None:
        return None
    rec = _record_type(hint)
    if isinstance(value, Record) and isinstance(value, rec or ()):  # built typed (run/assemble.py)
        return value
    if rec is not None:
        if not isinstance(value, dict):
            raise TypeError(f"{rec.__name__} expects an object, got {type(value).__name__}")
        return rec.from_dict(value)
    origin, args = _origin_args(hint)
    if origin is dict and isinstance(value, dict):
        (_, item) = args or (str, Any)
        if _record_type(item) is not None:
            return {k: _read(item, v) for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        (item,) = args or (Any,)
        item_rec = _record_type(item)
        if item_rec is not None:
            return [_read(item, v) for v in value]
    return value


def _write(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_write(v) for v in value]
    if isinstance(value, tuple):
        return [_write(v) for v in value]
    if isinstance(value, dict):
        return {k: _write(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------- the schema


_PLAIN = {str: "string", bool: "boolean", int: "integer", dict: "object", list: "array"}


def _schema(hint: Any, defs: dict[str, Any]) -> dict:
    """The JSON Schema of one annotation; a Record is a `$ref` to its entry in `defs`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint is float:
        return dict(FLOAT)
    if isinstance(hint, type) and issubclass(hint, Record):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # placeholder: a section that holds itself stops here
            defs[hint.__name__] = _object(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if hint in _PLAIN:
        return {"type": _PLAIN[hint]}
    if origin in (typing.Union, types.UnionType):
        options = [_schema(a, defs) for a in args if a is not type(None)]
        if type(None) in args and options != [FLOAT]:
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is list:
        return {"type": "array", **({"items": _schema(args[0], defs)} if args else {})}
    if origin is dict:
        value = _schema(args[1], defs) if args else {}
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    raise TypeError(f"no JSON Schema for the annotation {hint!r}")


def _object(cls: type[Record], defs: dict[str, Any]) -> dict:
    """A section's object: its fields, its derived keys (read-only), any other key allowed."""
    props = {cls.KEYS.get(name, name): _schema(hint, defs) for name, hint in _hints(cls).items()}
    for name in cls.DERIVED:
        prop = inspect.getattr_static(cls, name)
        returns = typing.get_type_hints(prop.fget)["return"]
        props[name] = {**_schema(returns, defs), "readOnly": True}
    doc = inspect.cleandoc(vars(cls).get("__doc__") or "")
    if doc.startswith(cls.__name__ + "("):  # the signature dataclass writes where none was given
        doc = ""
    return {
        "type": "object",
        **({"description": doc} if doc else {}),
        "properties": props,
        **({"required": list(cls.REQUIRED)} if cls.REQUIRED else {}),
        "additionalProperties": True,  # a key no field models is kept in `extra`
    }


# --------------------------------------------------------------------- checking a file against it

_TYPES: dict[str, Any] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
_WORDS = {
    "null": "null",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "an object",
}


def mismatch(schema: dict, value: Any, path: str = "") -> str | None:
    """The first place `value` does not fit `schema` (a document from `json_schema`), as
    'runtime.speedup is the string 'fast'; expected a number, 'inf', '-inf' or null'; None when it
    fits. Covers the keywords `json_schema` writes, nothing more.

    A message is written only for the answer: an `anyOf` tries its alternatives in turn, and the
    ones that do not fit (a Float alternative tried on every null) say why as a `_Wrong`, worded
    only if it is the one returned (wording each cost ~60% of a check: tests/test_schema.py's
    wrong-type test checks ~18,000 documents)."""
    found = _mismatch(schema, value, path, schema.get("$defs", {}))
    return None if found is None else str(found)


@dataclasses.dataclass(frozen=True)
class _Wrong:
    """A value of the wrong type at `path`, worded (`_wrong`) when it is asked for."""

    value: Any
    path: str
    s: dict
    defs: dict

    def __str__(self) -> str:
        return _wrong(self.value, self.path, self.s, self.defs)


def _mismatch(s: dict, value: Any, path: str, defs: dict) -> str | _Wrong | None:
    if "$ref" in s:
        return _mismatch(defs[s["$ref"].rsplit("/", 1)[1]], value, path, defs)
    if "anyOf" in s:
        found = []
        for o in s["anyOf"]:
            f = _mismatch(o, value, path, defs)
            if f is None:
                return None
            found.append(f)
        # an object where a section or null is expected: say what inside the section is wrong
        deep = [f for o, f in zip(s["anyOf"], found) if _kind_fits(o, value, defs)]
        return deep[0] if len(deep) == 1 else _Wrong(value, path, s, defs)
    if "enum" in s and value not in s["enum"]:
        return _Wrong(value, path, s, defs)
    if "type" in s and not _TYPES[s["type"]](value):
        return _Wrong(value, path, s, defs)
    for i, item in enumerate(value if "items" in s else ()):
        found = _mismatch(s["items"], item, f"{path}[{i}]", defs)
        if found:
            return found
    if isinstance(value, dict):
        for key in s.get("required", ()):
            if key not in value:
                return f"{path or 'the report'} has no {key!r}"
        props, rest = s.get("properties", {}), s.get("additionalProperties", True)
        for key, item in value.items():
            sub = props.get(key, rest)
            found = sub is not True and _mismatch(sub, item, f"{path}.{key}" if path else key, defs)
            if found:
                return found
    return None


def _kind_fits(s: dict, value: Any, defs: dict) -> bool:
    """`value` is of the JSON type `s` names (an object for a section), whatever is inside it."""
    if "$ref" in s:
        return _kind_fits(defs[s["$ref"].rsplit("/", 1)[1]], value, defs)
    return "type" in s and _TYPES[s["type"]](value)


def _wrong(value: Any, path: str, s: dict, defs: dict) -> str:
    what = "null" if value is None else f"{_WORDS[_json_type(value)]} ({_short(value)})"
    return f"{path or 'the report'} is {what}; expected {_or(_expects(s, defs))}"


def _json_type(value: Any) -> str:
    return next(
        t for t in ("boolean", "integer", "number", "string", "array", "object") if _TYPES[t](value)
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _expects(s: dict, defs: dict) -> list[str]:
    """What a schema accepts, in words, alternatives flattened."""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[1]
        target = defs[name]
        return [f"an object ({name})"] if target.get("type") == "object" else _expects(target, defs)
    if "anyOf" in s:
        return [w for o in s["anyOf"] for w in _expects(o, defs)]
    if "enum" in s:
        return [repr(v) for v in s["enum"]]
    return [_WORDS[s["type"]]] if "type" in s else ["anything"]


def _or(words: list[str]) -> str:
    words = list(dict.fromkeys(words))
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
