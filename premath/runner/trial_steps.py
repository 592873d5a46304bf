"""Trial start and end as `premath.harness.step.v1` rows, so trajectory tools and the KPI see runs.

Rows are normalised by `premath.models.trajectory.normalize_step` (the reference's rules) and
appended by `premath.runner.trial` with `premath.store.jsonl.append_line`: the same bytes
`harness-trajectory append` writes, without the runner importing `premath.harness` (which
imports the runner's process module; the two stay independent layers).
specs/experiment.md "Trajectory rows".
"""

from __future__ import annotations

from premath.models.trajectory import normalize_step
from premath.models.vocabulary import STEP_KIND
from premath.store.canonical import row_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

START_ACTION = "experiment.trial.start"
END_ACTION = "experiment.trial.end"
STARTED_CLASS = "started"


def trial_step(
    *,
    run_id: str,
    trial_id: str,
    attempt: int,
    action: str,
    result_class: str,
    experiment_ref: str,
    issue_id: str | None,
    witness_refs: tuple[str, ...] = (),
    started_at: str | None,
    finished_at: str,
) -> dict[str, Any]:
    """One normalised row; `stepId` is `<run>.<trial>.a<attempt>.<start|end>`."""
    phase = "start" if action == START_ACTION else "end"
    return normalize_step(
        {
            "schema": 1,
            "stepKind": STEP_KIND,
            "stepId": f"{run_id}.{trial_id}.a{attempt}.{phase}",
            "issueId": issue_id,
            "action": action,
            "resultClass": result_class,
            "witnessRefs": list(witness_refs),
            "lineageRefs": [experiment_ref, f"run://{run_id}"],
            "startedAt": started_at,
            "finishedAt": finished_at,
        }
    )


def trial_step_line(**fields: Any) -> bytes:
    """`trial_step` as the bytes of one JSONL line (what `harness-trajectory append` writes)."""
    return row_bytes(trial_step(**fields))
