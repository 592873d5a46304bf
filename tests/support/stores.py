"""Issue stores written directly (no CLI, no lock): many rows at once, in our bytes."""

from pathlib import Path

import orjson

DESCRIPTION = "Acceptance:\n- works"


def write_open_store(project: Path, count: int, description: str = DESCRIPTION) -> Path:
    """`project/.premath/issues.jsonl` holding issues bd-1 .. bd-`count`, all open, priorities
    cycling 0-2, sorted by id as our writers sort them."""
    rows = [
        {"id": f"bd-{n}", "title": f"Issue {n}", "description": description, "status": "open",
         "priority": n % 3, "issue_type": "task", "created_at": "2026-02-22T00:00:00Z",
         "updated_at": "2026-02-22T00:00:00Z"}
        for n in range(1, count + 1)
    ]  # fmt: skip
    path = project / ".premath" / "issues.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(sorted(orjson.dumps(row) + b"\n" for row in rows)))
    return path
