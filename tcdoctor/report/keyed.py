"""`Keyed`: a record whose JSON keeps the keys it was given, in the order given.

A row filled in steps (a probe's keys, then each join's: report/compile_joins.py) or made in
several places (a fix's side, sections/fixes.py) holds the keys of the steps that ran, some as
null. Read from a dict (`from_dict`) it writes back exactly those keys in that order, so saved
and new reports write the JSON they always did; built by field, its set fields in field order; a
field set later is written after those given first. Keys no field models stay in `extra`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, TypeVar

from .record import Record

K = TypeVar("K", bound="Keyed")


@dataclass
class Keyed(Record):
    """Base of a record that writes the keys it was given, in their order (module docstring)."""

    def __post_init__(self) -> None:
        keys = [self.KEYS.get(k, k) for k in _fields(type(self)) if getattr(self, k) is not None]
        object.__setattr__(self, "_keys", keys)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        keys = self.__dict__.get("_keys")
        key = self.KEYS.get(name, name)
        if keys is not None and key not in keys and name in _fields(type(self)):
            keys.append(key)  # a figure set later is written after those given first

    @classmethod
    def of(cls: type[K], **figures: Any) -> K:
        """A record holding exactly these keys (None ones too), written in this order."""
        return cls.from_dict(figures)

    @classmethod
    def from_dict(cls: type[K], d: dict | None) -> K:
        rec = super().from_dict(d)
        object.__setattr__(rec, "_keys", list(d or {}))
        return rec

    def to_dict(self) -> dict:
        every = super().to_dict()
        out = {k: every[k] for k in self._keys if k in every}
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")
