"""Probes: each measures one thing in the child process and returns a JSON-ready dict."""
