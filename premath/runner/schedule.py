"""The deterministic trial schedule: which (variant, task, replication) runs in which order.

- `variant_sequential`: variant, then task, then replication (one arm after another);
- `paired_interleaved`: task, then variant, then replication (the arms of a task run close
  together, so drift in a shared dependency hits both sides of a pair);
- `randomized`: the variant_sequential order shuffled by `random.Random(seed)` (Fisher-Yates),
  the same order for the same seed on every machine and Python version.

Slots never change between a run and its resumes: the schedule is rebuilt from the stored
resolved experiment and tasks, and the trial ids derive from it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from premath.models.experiment import Scheduling
from premath.runner.paths import trial_id_for


@dataclass(frozen=True, slots=True)
class Slot:
    schedule_index: int
    variant_id: str
    task_index: int
    task_id: str
    replication: int

    @property
    def trial_id(self) -> str:
        return trial_id_for(self.schedule_index, self.variant_id, self.task_id, self.replication)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.variant_id, self.task_id, self.replication)


def build_schedule(
    variant_ids: Sequence[str],
    task_ids: Sequence[str],
    replications: int,
    policy: Scheduling,
    seed: int,
) -> list[Slot]:
    if policy == "paired_interleaved":
        order = [
            (v, t, r)
            for t in range(len(task_ids))
            for v in range(len(variant_ids))
            for r in range(replications)
        ]
    else:
        order = [
            (v, t, r)
            for v in range(len(variant_ids))
            for t in range(len(task_ids))
            for r in range(replications)
        ]
        if policy == "randomized":
            shuffler = random.Random(seed)
            # Fisher-Yates by hand over randrange (stable since Python 3.2): the order is ours.
            for i in range(len(order) - 1, 0, -1):
                j = shuffler.randrange(i + 1)
                order[i], order[j] = order[j], order[i]
    return [Slot(index, variant_ids[v], t, task_ids[t], r) for index, (v, t, r) in enumerate(order)]
