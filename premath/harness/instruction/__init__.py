"""Instruction-mediated work: envelopes, the policy registry, proposals, witnesses, the pipeline.

Behaviour: agent-surface.md §4 (specs in docs/); the witness model is
premath.models.instruction_witness.
"""

from __future__ import annotations
