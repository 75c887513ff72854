"""The proofs, by the name a rewrite asks for them (`Rewrite.proofs`), one line each (torch-free).

A rule's patch names the proofs it needs; the prover (proving/prove.py) looks each up here and
runs it after the checks every patch gets (eager outputs, breaks, compiled numerics). A new proof
is one module of this package (a `prove(ctx) -> checks` function) and one line here; a rule whose
proof is its own declares the proof's name in its rule module, and the proof module imports it.
A name with no proof here fails the patch ("no proof of this kind").
"""

from __future__ import annotations

from ...rewrite import Proof
from . import branches, custom_op, helper_disable, helper_op, said
from .context import ProofFn

PROOFS: dict[str, ProofFn] = {
    Proof.STDOUT: said.stdout,
    Proof.WARNINGS: said.warnings,
    Proof.LOGS: said.logs,
    Proof.BRANCHES: branches.prove,
    Proof.OPCHECK: custom_op.prove,
    helper_op.PROOF: helper_op.prove,  # TCD106's own proof
    helper_disable.PROOF: helper_disable.prove,  # TCD107's own proof
}
