"""`check --baseline` tests: the model as on main (tests/targets/gate_model.py)."""

from gate_model import build as _build


def build():
    return _build(extra=False)
