"""`check --baseline` tests: the same model after a change that added one graph break."""

from gate_model import build as _build


def build():
    return _build(extra=True)
