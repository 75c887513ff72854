"""The proofs a patch's rule asks for, one module each (said.py: stdout, warnings and log
records; branches.py: torch.cond's branches and predicate; custom_op.py: opcheck and the compiled
copy on every variant; helper_op.py: a helper wrapped whole, against the original helper and its
gradients), found by name in registry.py. Each reads a `ProofContext` (context.py)
and returns named checks."""

from .context import Check, Checks, ProofContext, ProofFn

__all__ = ["Check", "Checks", "ProofContext", "ProofFn"]
