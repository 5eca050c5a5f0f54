"""Reconcilery: the CLI and the local runtime (``reconcilery up``) that wires every component."""
