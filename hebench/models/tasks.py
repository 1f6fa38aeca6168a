"""The tasks by name: :func:`task_for` gives the one a suite's model is trained for (:mod:`.task`'s interface)."""

from __future__ import annotations

from hebench.config import ModelSpec
from hebench.models.classification import CLASSIFICATION
from hebench.models.language.task import NEXT_TOKEN
from hebench.models.task import Task

TASKS: dict[str, Task] = {CLASSIFICATION.name: CLASSIFICATION, NEXT_TOKEN.name: NEXT_TOKEN}


def task_for(spec: ModelSpec) -> Task:
    """The task ``spec``'s model is trained for (classification, or next-token prediction for the decoders)."""
    return TASKS[spec.task]
