"""Renderers: each turns a Report into one output format and never measures anything."""
