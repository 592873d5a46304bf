"""A bench run folder as `bench run` leaves it while its harness runs (policy pinned)."""

import hashlib
from pathlib import Path

import orjson


def live_bench_run(run_dir: Path, policy: bytes = b'{"version": 1, "deny": []}') -> Path:
    """`run_dir/raw/` with `policy.json` and a `run.started` event pinning its digest."""
    raw = run_dir / "raw"
    raw.mkdir(parents=True)
    (raw / "policy.json").write_bytes(policy)
    digest = "sha256:" + hashlib.sha256(policy).hexdigest()
    started = {"kind": "run.started", "at": "2026-03-01T10:00:00.000Z", "policy_digest": digest}
    (raw / "events.jsonl").write_bytes(orjson.dumps(started) + b"\n")
    return raw
