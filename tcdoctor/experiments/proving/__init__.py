"""Source patches for graph breaks in the user's own code: planned, applied to a copy, proven.

experiments/rewrite/ writes a patch (torch-free text); this package decides which breaks get one
and proves each in a fresh child of its own (`PatchFix`):

- plan.py: the parent's plan (in the cold child, torch-free): the breaks in the user's own files
  and in the target's folder, each with its rewrite or the reason there is none; a break inside a
  library is planned at the user's line that calls it, for a rule that wraps the call;
- sandbox.py: the copy and the eager calls: the target's folder mirrored, the user's modules
  dropped, each eager call captured (outputs, buffers, stdout, warnings, log records), the
  user's frames traced (`traced`: the one place a trace function is set) and a line's or a
  function's inputs and result observed for the rules that need the eager run first;
- proofs/: one module per proof a rewrite may ask for, found by name in proofs/registry.py;
- prove.py: `run`, the patch child: planned again, eager outputs compared, each proof run;
- measure.py: the patched copy's breaks (fewer, none new) and its real-backend row, timed against
  the ORIGINAL eager code.

A patch is verified only when every check holds; one that fails is listed with what failed.

Pitfalls. Two patches of one file are proven one at a time, each against the original file: the
diff file holds one verified patch per file (the best, report/sections/fixes.py `choose`), and the
report says to analyse again for the next. A branch rewrite is verified on the inputs tried only;
a patch in a file imported from outside the target's folder is not tried (the copy would not hold
it).
"""

from .plan import plan, user_sites
from .prove import run

__all__ = ["plan", "run", "user_sites"]
