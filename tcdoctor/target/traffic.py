"""The traffic a served model gets: the requests `tcdoctor analyze --traffic N` replays.

A user describes it one of three ways, all `Traffic`:

- a list of requests: `Traffic([(x1,), (x2,), {"input_ids": ids}, ...])`, each one call's
  arguments as a Workload's variants are written (an input tuple, a lone tensor, a dict of keyword
  arguments with the positional inputs kept, or a `CallArgs`);
- a generator function: `Traffic(requests_fn)`, where `requests_fn()` returns an iterable of such
  requests (called afresh for every replay, so each replay sees the same requests when the function
  draws them from a seeded RNG; tcdoctor resets every RNG before each replay);
- a shape distribution with a seed: `Traffic.shapes(make, n=200, seed=0, batch=range(1, 33),
  seq={16: 5, 64: 3, 256: 1})`, where each named dimension is drawn on its own (a range or list:
  uniformly; a dict: value → weight, a histogram) and `make(batch=.., seq=..)` returns the request.
  `buckets={"seq": [32, 64, 128, 256]}` gives the bucket sizes a server pads to: the padded
  strategy calls `make` with each bucketed dimension rounded up to its bucket (the shapes a padding
  server feeds the model), and a size above the largest bucket is left as drawn.

A traffic may carry the user's own warm-up, `warmup=[...]`: the inputs the server runs at
start-up, before its first request (for `Traffic(list or fn)` requests written as the traffic's
are; for `Traffic.shapes` each a dict of the drawn dimensions, `{"batch": 1, "seq": 16}`, given to
`make`). The replay runs them first in the same process, their compiles are the server's start-up
cost, not the traffic's, and the warm-up proof checks them (probes/warmup.py); without one, the
proof checks the warm-up tcdoctor derives from the traffic's compiles.

`Workload(model, inputs, traffic=Traffic(...))` hands it to tcdoctor; `--traffic N` replays N of
its requests (a list is cycled when N exceeds its length). Without a Workload traffic, `--traffic N`
replays the workload's own example inputs and variants, cycled (`from_workload`).

Each request is a `Request`: its index in the traffic, its call arguments, and a description of its
shapes ("(Tensor[4,128] int64, attention_mask=Tensor[4,128] int64)") that every one-line error and
the report name it by. Nothing here imports torch at module level: the parent process reads the
Traffic's description only through the child's events.

Pitfalls: a generator that raises is reported at the index it failed to produce (the requests
before it stand); a request cannot be judged before it is served, so a request the model rejects is
found by the replay (probes/traffic_replay.py), not here.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any, Callable, ClassVar, Iterable, Iterator, Mapping, Sequence

from .workload import CallArgs, as_inputs

DEFAULT_REQUESTS = 200  # requests replayed from a generator or distribution when N is not given

Dim = Sequence[int] | Mapping[int, float]


@dataclasses.dataclass(frozen=True)
class Request:
    """One request of the traffic: its index (0-based, in traffic order), its call arguments and
    its shapes in words."""

    index: int
    args: CallArgs
    shapes: str
    dims: Mapping[str, int] | None = None  # a distribution's drawn dimensions (None otherwise)


class TrafficError(Exception):
    """The traffic could not produce request `index`: its one line names the request."""

    def __init__(self, index: int, message: str):
        super().__init__(f"the traffic could not produce request {index}: {message}")
        self.index = index


def _describe_value(x: Any) -> str:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None:
        return f"Tensor[{','.join(map(str, tuple(shape)))}] {str(dtype).replace('torch.', '')}"
    if isinstance(x, (int, float, bool, str)) or x is None:
        return repr(x)
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_describe_value(v) for v in list(x)[:4])
        return f"{type(x).__name__}({inner}{', ...' if len(x) > 4 else ''})"
    if isinstance(x, dict):
        return (
            "dict(" + ", ".join(f"{k}={_describe_value(v)}" for k, v in list(x.items())[:4]) + ")"
        )
    return type(x).__name__


def describe(ca: CallArgs) -> str:
    """'(Tensor[2,16] int64, attention_mask=Tensor[2,16] int64)': a request's shapes in words."""
    parts = [_describe_value(x) for x in ca.args] + [
        f"{k}={_describe_value(v)}" for k, v in ca.kwargs.items()
    ]
    return "(" + ", ".join(parts) + ")"


def _draw(rng: random.Random, dim: Dim) -> int:
    if isinstance(dim, Mapping):
        values, weights = list(dim.keys()), [float(w) for w in dim.values()]
        return int(rng.choices(values, weights=weights, k=1)[0])
    return int(rng.choice(list(dim)))


def _check_dim(name: str, dim: Any) -> None:
    if isinstance(dim, Mapping):
        ok = bool(dim) and all(
            isinstance(k, int) and isinstance(w, (int, float)) and w >= 0 for k, w in dim.items()
        )
        ok = ok and sum(float(w) for w in dim.values()) > 0
    else:
        try:
            values = list(dim)
        except TypeError:
            values = []
        ok = bool(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    if not ok:
        raise TypeError(
            f"Traffic.shapes: dimension {name!r} must be a range or list of ints, or a dict "
            "{size: weight} with positive total weight"
        )


def bucket_of(size: int, sizes: Sequence[int]) -> int:
    """The smallest bucket size >= `size`; `size` itself when it exceeds every bucket."""
    fits = [b for b in sorted(sizes) if b >= size]
    return fits[0] if fits else size


@dataclasses.dataclass
class Traffic:
    """The requests a served model gets: a list, a generator function, or a shape distribution.

    `Traffic(requests)`: a list of requests (input tuples, lone tensors, kwargs dicts, CallArgs).
    `Traffic(fn)`: `fn()` returns an iterable of requests, called afresh for each replay.
    `Traffic.shapes(make, n=200, seed=0, **dims)`: `make(**drawn)` returns each request.
    `n`: how many requests a replay takes when `--traffic` does not say (default: the list's
    length, else DEFAULT_REQUESTS). `buckets`: {dimension: sizes} a padding server rounds up to
    (shape distributions only: tcdoctor cannot pad an arbitrary request). `warmup`: the user's
    own start-up warm-up (requests; for a distribution, dicts of its dimensions for `make`)."""

    source: Sequence[Any] | Callable[[], Iterable[Any]] | None = None
    n: int | None = None
    seed: int | None = None
    make: Callable[..., Any] | None = None
    dims: dict[str, Dim] = dataclasses.field(default_factory=dict)
    buckets: dict[str, Sequence[int]] | None = None
    description: str | None = None
    warmup: Sequence[Any] | None = None

    is_traffic: ClassVar[bool] = True  # what Workload checks (it cannot import this module)

    def __deepcopy__(self, memo: dict) -> Traffic:
        """The same Traffic: a workload's pristine copies (target/pristine.py) share it. The replay
        reads requests, never calls a copy's model with them, and a list of hundreds of tensors
        copied per fresh copy would cost every phase for nothing."""
        return self

    def __post_init__(self) -> None:
        if self.make is None:
            if self.source is None:
                raise TypeError(
                    "Traffic needs requests: a list, a generator function, or use Traffic.shapes(make, ...)"
                )
            if isinstance(self.source, (str, bytes)) or not (
                callable(self.source) or isinstance(self.source, Sequence)
            ):
                raise TypeError(
                    "Traffic takes a list of requests or a function returning an iterable of "
                    f"requests, got {type(self.source).__name__}"
                )
            if self.buckets:
                raise TypeError(
                    "Traffic(buckets=...) needs Traffic.shapes(make, ...): tcdoctor pads by "
                    "calling make with the bucketed sizes, and cannot pad an arbitrary request"
                )
        else:
            if not callable(self.make):
                raise TypeError("Traffic.shapes: make must be a function returning a request")
            if not self.dims:
                raise TypeError(
                    "Traffic.shapes needs at least one dimension, e.g. batch=range(1, 33)"
                )
            for name, dim in self.dims.items():
                _check_dim(name, dim)
            for name, sizes in (self.buckets or {}).items():
                if name not in self.dims:
                    raise TypeError(f"Traffic.shapes: bucket dimension {name!r} is not drawn")
                _check_dim(f"buckets[{name}]", sizes)
        if self.n is not None and (not isinstance(self.n, int) or self.n < 1):
            raise TypeError(f"Traffic(n=...) must be a positive integer, got {self.n!r}")
        self._check_warmup()

    def _check_warmup(self) -> None:
        """A warm-up is a list; a distribution's entries are dicts naming its dimensions."""
        if self.warmup is None:
            return
        if isinstance(self.warmup, (str, bytes)) or not isinstance(self.warmup, Sequence):
            raise TypeError(
                f"Traffic(warmup=...) takes a list of requests, got {type(self.warmup).__name__}"
            )
        if self.make is None:
            return
        for entry in self.warmup:
            if not isinstance(entry, Mapping) or set(entry) != set(self.dims):
                raise TypeError(
                    "Traffic.shapes(warmup=...) takes dicts of the drawn dimensions "
                    f"({', '.join(self.dims)}) for make, got {entry!r}"
                )

    @classmethod
    def shapes(
        cls,
        make: Callable[..., Any],
        n: int = DEFAULT_REQUESTS,
        seed: int = 0,
        buckets: dict[str, Sequence[int]] | None = None,
        warmup: Sequence[Mapping[str, int]] | None = None,
        **dims: Dim,
    ) -> Traffic:
        """A shape distribution: each request's dimensions drawn (seeded) and `make(**dims)` called;
        `warmup`: the dimensions of the user's own start-up requests."""
        return cls(make=make, n=n, seed=seed, dims=dict(dims), buckets=buckets, warmup=warmup)

    @property
    def kind(self) -> str:
        if self.make is not None:
            return "distribution"
        return "generator" if callable(self.source) else "list"

    def default_n(self) -> int:
        if self.n is not None:
            return self.n
        if self.kind == "list":
            return max(1, len(self.source))  # type: ignore[arg-type]
        return DEFAULT_REQUESTS

    def describe(self) -> str:
        """The traffic in words, for the report."""
        if self.description:
            return self.description
        if self.kind == "distribution":
            parts = []
            for name, dim in self.dims.items():
                if isinstance(dim, Mapping):
                    parts.append(f"{name} from the histogram {dict(dim)}")
                elif isinstance(dim, range) and dim.step == 1:
                    parts.append(f"{name} uniform in {dim.start}..{dim.stop - 1}")
                else:
                    parts.append(f"{name} uniform over {list(dim)}")
            return f"shapes drawn with seed {self.seed}: " + ", ".join(parts)
        if self.kind == "generator":
            return f"requests from {getattr(self.source, '__name__', 'a generator function')}()"
        return f"a list of {len(self.source)} requests"  # type: ignore[arg-type]

    def info(self) -> dict:
        """What the parent reads of it (the environment record: the parent imports no target)."""
        return {
            "kind": self.kind,
            "default_n": self.default_n(),
            "seed": self.seed,
            "description": self.describe(),
            "buckets": {k: list(v) for k, v in self.buckets.items()} if self.buckets else None,
            "warmup": len(self.warmup) if self.warmup is not None else None,
        }

    def raw(self, padded: bool = False) -> Iterator[tuple[Any, dict[str, int] | None]]:
        """The requests as the user wrote them, endlessly for a list (cycled) and a distribution,
        with each drawn dimension set (None for a list or generator). `padded`: a distribution's
        bucketed dimensions rounded up to their bucket."""
        if self.kind == "distribution":
            rng = random.Random(self.seed)
            while True:
                drawn = {name: _draw(rng, dim) for name, dim in self.dims.items()}
                if padded and self.buckets:
                    drawn = {
                        k: bucket_of(v, self.buckets[k]) if k in self.buckets else v
                        for k, v in drawn.items()
                    }
                yield self.make(**drawn), drawn  # type: ignore[misc]
        elif self.kind == "generator":
            for r in self.source():  # type: ignore[operator]
                yield r, None
        else:
            if not self.source:
                return
            for r in itertools.cycle(self.source):  # type: ignore[arg-type]
                yield r, None


def as_call(request: Any, base: CallArgs) -> CallArgs:
    """One request's call arguments, as a Workload variant is read: a tuple replaces the positional
    inputs (the keyword arguments kept), a dict replaces the keyword arguments, a CallArgs is taken
    as it is, anything else is a lone positional input."""
    if isinstance(request, CallArgs):
        return request
    if isinstance(request, dict):
        return CallArgs(base.args, dict(request))
    return CallArgs(as_inputs(request), dict(base.kwargs))


def from_workload(workload: Any) -> Traffic:
    """The traffic of a target that gave none: its example inputs then each call variant, cycled
    (state-changing variants, `lambda m: m.eval()`, are left out: a request is call arguments)."""
    from .workload import is_state_change

    reqs: list[Any] = [workload.call_args]
    reqs += [workload.variant_args(v) for v in workload.variants if not is_state_change(v)]
    return Traffic(
        reqs,
        description="the target gave no traffic: replaying its inputs and variants "
        f"({len(reqs)} distinct request{'s' if len(reqs) != 1 else ''}, cycled)",
    )


def requests(traffic: Traffic, workload: Any, n: int, padded: bool = False) -> Iterator[Request]:
    """The first `n` requests of `traffic` as Requests (index, call arguments, shapes). A request
    the traffic fails to produce (the generator raised, `make` raised) raises TrafficError naming
    its index: the requests before it were already yielded."""
    base = workload.call_args
    it = traffic.raw(padded)
    for index in range(n):
        try:
            raw, dims = next(it)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - the user's generator: one line naming the request
            text = str(exc).strip().splitlines()
            raise TrafficError(
                index, f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
            ) from None
        ca = as_call(raw, base)
        yield Request(index, ca, describe(ca), dims)


def warmup_requests(traffic: Traffic, workload: Any) -> list[Request]:
    """The user's own warm-up (`Traffic(warmup=...)`) as Requests, indexed by their place in it
    (a distribution's entries through `make`); empty when the traffic has none. A warm-up entry
    that `make` cannot build raises TrafficError naming it."""
    base, out = workload.call_args, []
    for index, entry in enumerate(traffic.warmup or ()):
        dims = None
        if traffic.make is not None:
            dims = {k: int(v) for k, v in entry.items()}
            try:
                entry = traffic.make(**dims)
            except Exception as exc:  # noqa: BLE001 - the user's make: one line naming it
                raise TrafficError(
                    index, f"warm-up entry {dims}: {type(exc).__name__}: {exc}"
                ) from None
        ca = as_call(entry, base)
        out.append(Request(index, ca, describe(ca), dims))
    return out
