"""Experiments run after the main analysis, each in a fresh child: compile strategies (modes, training
ways, dynamic shapes, regions), fixes that need no source edit, the backend ablation. One typed spec
class per kind (specs.py); every row is one paired measurement (pair.py); what the parent runs when,
and within which budget, is plan.py's (run/launcher.py starts the children it asks for). Imports
only the layers below run/."""
