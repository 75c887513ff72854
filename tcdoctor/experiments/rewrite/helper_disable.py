"""TCD107 helper-disable: the fallback for a helper no custom op can stand for, `@torch.compiler.
disable` on the helper (a module-level function or a method) that holds the break.

Where it answers. Only where the rules before it refused or did not answer a break in a NumPy or
library helper (the families custom-op and helper-op, or no rule at all), and only on a helper:
a function or method of the file that another function of the file calls (`smooth(h)`,
`self._gate(h)`), never `forward`, `__call__` or a function nothing in the file calls (disabling
the compiled entry itself would leave no graph at all). Typical helpers: one that writes Python
state (appends to a module-level list, bumps a counter, writes a file or a log record), which a
custom op must never stand for (a custom op's body is opaque and runs outside the traced
program: a write it makes through a copied argument is lost, and its fake never makes it); one
whose output length depends on the data (a boolean mask, `np.flatnonzero`), where a fake with
one fixed shape would bake the observed length into the graph; one TCD106 cannot read (a branch,
an array read off its chain).

What it leaves, and what it gains: the helper's call still splits the graph (PyTorch counts one
"Skip calling `torch.compiler.disable()`d function" break per call site) and runs eagerly between
the graphs, exactly as in eager mode, so every write it makes happens as written; what it removes
are the breaks Dynamo takes while trying to trace into the helper and the library (on the state
writer of tests/targets/shapes, 11 breaks and 7 graphs become 1 break and 2 graphs, counted with
PyTorch's counters). Safe: the helper's own code runs unchanged, eager and compiled.

Its proof (proofs/helper_disable.py) counts the breaks with PyTorch's counters, compares outputs
and the Python-side state (the module's lists, dicts, numbers; the model's plain attributes;
stdout and log records) after the original eager call and after the patched copy's compiled call.

Pitfalls: a helper that is also the compiled entry elsewhere (`torch.compile(smooth)`) would lose
its graph; the rule sees only this file's calls. A decorated helper is refused (the order of
decorators decides what is disabled).
"""

from __future__ import annotations

import libcst as cst

from ...outcomes import Safety
from . import effects, tree
from .base import NoRewrite, Observed, Page, Result, Rewrite, Rule
from .tree import Spot

CODE, NAME = "TCD107", "helper-disable"
PROOF = "helper-disable"  # its own proof: experiments/proving/proofs/helper_disable.py
AFTER = ("custom-op", "helper-op", None)  # the refusals it stands in for (None: no rule)
ENTRIES = frozenset({"forward", "__call__", "__init__", "build"})
DECORATOR = "torch.compiler.disable"
LEAVES = ("Skip calling `torch.compiler.disable()`d function",)  # the call site's own break


def _helper(spot: Spot) -> tuple[cst.FunctionDef, cst.ClassDef | None] | None:
    """The innermost function holding the line, when it is a module-level function or a method
    of a module-level class (None otherwise)."""
    funcs = spot.funcs()
    if len(funcs) != 1:
        return None
    func = funcs[0]
    parent = spot.parents.get(func)
    if isinstance(parent, cst.Module):
        return func, None
    block = parent
    klass = spot.parents.get(block) if block is not None else None
    if isinstance(klass, cst.ClassDef) and isinstance(spot.parents.get(klass), cst.Module):
        return func, klass
    return None


def _called(spot: Spot, func: cst.FunctionDef, klass: cst.ClassDef | None) -> bool:
    """Whether another function of the file calls the helper (`name(...)`, or `self.name(...)`
    in its class)."""
    name = func.name.value
    scope: cst.CSTNode = klass if klass is not None else spot.module
    for call in tree.calls(scope):
        if spot.func(call) is func or spot.func(call) is None:
            continue
        f = call.func
        if klass is None and isinstance(f, cst.Name) and f.value == name:
            return True
        if (
            klass is not None
            and isinstance(f, cst.Attribute)
            and f.attr.value == name
            and isinstance(f.value, cst.Name)
            and f.value.value == "self"
        ):
            return True
    return False


def writes(spot: Spot, func: cst.FunctionDef) -> list[str]:
    """The Python state the helper writes, as source: calls with an effect (`PEAKS.append(...)`,
    `log.info(...)`, `open(...)`), `global`/`nonlocal` names, and attributes assigned."""
    found: list[str] = []
    for node in tree.walk(func.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            found += [f"{type(node).__name__.lower()} {n.name.value}" for n in node.names]
        elif isinstance(node, (cst.AssignTarget, cst.AugAssign)):
            if isinstance(node.target, cst.Attribute):  # self.calls, module.STATE
                found.append(spot.code(node.target))
        elif isinstance(node, cst.Expr):
            found += [e.text for e in effects.effects(spot, node.value)]
    return found


def match(spot: Spot, _observed: Observed | None = None) -> Result | None:
    """The decorated helper, or None where the line is not in a helper of the file."""
    found = _helper(spot)
    if found is None:
        return None
    func, klass = found
    name = func.name.value
    if name in ENTRIES or (name.startswith("__") and name.endswith("__")):
        return None
    if not _called(spot, func, klass):
        return None
    if func.decorators:
        return NoRewrite(f"the helper {name}() is decorated: disable would not wrap it", NAME)
    if any(isinstance(n, (cst.Yield, cst.Await)) for n in tree.walk(func.body)):
        return NoRewrite(f"the helper {name}() is a generator or a coroutine", NAME)
    decorator = cst.Decorator(cst.parse_expression(DECORATOR))
    new = func.with_changes(decorators=[decorator])
    module = tree.ensure_torch(spot.module.visit(tree.ReplaceNodes({func: new})))
    what = f"{klass.name.value}.{name}" if klass is not None else name
    written = writes(spot, func)
    note = (
        f"{what}() runs eagerly between two graphs, as in eager mode: the call still splits the "
        "graph (one break per call site), the breaks inside it are gone"
    )
    if written:
        note += f"; the state it writes ({', '.join(written[:3])}) is written as before"
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.SAFE,
        title=f"run the helper {what}() eagerly: @torch.compiler.disable (the break at line "
        f"{spot.site.line})",
        note=note,
        source=module.code,
        line=spot.site.line,
        proofs=(PROOF,),
    )


PAGE = Page(
    rewrites=(
        "the helper (a module-level function or a method another function of the file calls) "
        "that holds a break no custom op can stand for gets `@torch.compiler.disable`: it runs "
        "eagerly between two graphs, so what it writes (a list, a counter, a file, a log record) "
        "is written as in eager mode. Handles: a helper that writes Python state (never a custom "
        "op), a helper whose output length depends on the data, a helper the custom-op rules "
        "cannot read (a branch, an array read off its chain), a method. What it leaves: one "
        'break per call site ("Skip calling `torch.compiler.disable()`d function"), the helper '
        "running eagerly between two graphs. What it gains: the breaks inside the helper and the "
        "library are gone, as its proof counts them with PyTorch's counters (11 breaks and 7 "
        "graphs become 1 and 2 on the state writer of the cure corpus)"
    ),
    refuses=(
        "`forward`, `__call__` or a function nothing in the file calls (the compiled entry "
        "itself would lose its graph); a nested function; a decorated helper (the decorators' "
        "order decides what is disabled); a generator or coroutine. Not tried where a custom op "
        "(TCD105, TCD106) is written: the op removes the break, disable keeps one per call"
    ),
    proof=(
        "PyTorch's counters (counters['graph_break'] and ['unimplemented'], unique graphs) on "
        "the original and the patched copy compiled (backend eager): fewer breaks; the patched "
        "copy compiled against the original eager on every input variant: outputs "
        "by the numerics rule and the Python-side state (the module's lists, dicts and numbers, "
        "the model's plain attributes, stdout and log records) equal"
    ),
    example=(
        "import numpy as np\nimport scipy.ndimage\nimport torch\n\nHISTORY = []\n\n\n"
        "def despike(x):\n"
        "    y = scipy.ndimage.median_filter(x.detach().numpy(), size=3)\n"
        "    HISTORY.append(float(np.abs(y).max()))\n"
        "    return torch.from_numpy(y)\n\n\n"
        "def forward(x):\n"
        "    return despike(x) + x\n"
    ),
    example_line=9,
    example_gb_type="attempted to trace numpy function unsupported by PyTorch",
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.SAFE,
    the_break=(
        "a break inside a helper of yours (a function or method another function calls) that no "
        "custom op can stand for: it writes Python state, its output length depends on the data, "
        "or TCD105/TCD106 cannot read it"
    ),
    the_rewrite=(
        "`@torch.compiler.disable` on the helper: it runs eagerly between two graphs (one break "
        "per call site stays), its writes kept"
    ),
    statements=(cst.SimpleStatementLine, cst.If, cst.For, cst.While, cst.With),
    proofs=(PROOF,),
    match=match,
    page=PAGE,
    library_calls=True,
    checked=(
        "fewer breaks in PyTorch's counters; outputs and Python-side state (module lists, dicts "
        "and numbers, the model's attributes, stdout, log records) equal, original eager vs "
        "patched compiled, on every input variant"
    ),
    safety_note="the helper's code runs unchanged, eagerly, in both",
    fallback=AFTER,
    leaves=LEAVES,
)
