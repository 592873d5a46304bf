"""The observation surface (specs/observation.md): build it from the CI witnesses and issue
memory, load and query it, and gather what the live dashboard shows."""

from __future__ import annotations
