"""Bytes on disk: canonical encodings, atomic writes, append-only JSONL and lock markers."""

from __future__ import annotations
