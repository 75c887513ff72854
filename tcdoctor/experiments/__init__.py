"""Experiments run after the main analysis, each in a fresh child: compile strategies (modes, training
ways, dynamic shapes, regions), fixes that need no source edit, the backend ablation. One typed spec
class per kind (specs.py); every row is one paired measurement (pair.py). Imports only probes/, target/
and the base layer."""
