"""premath: a harness runtime for coding agents, wire-compatible with the reference CLI."""

__version__ = "0.1.0"
