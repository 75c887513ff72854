"""Renderers: each turns a Report into one output format and never measures anything.

One `Renderer` (base.py) per format: TerminalRenderer, MarkdownRenderer, HtmlRenderer.
"""
