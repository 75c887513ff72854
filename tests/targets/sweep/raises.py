"""Sweep test target: build() raises, so analyze exits 3 and writes no report."""


def build():
    raise RuntimeError("no weights for this model")
