"""The data layer: the task registry and its files (mirror first, then the Hub), splits, corpora, metrics.

spec       what a task is (`TaskSpec`), the registry `TASKS`, the layer's errors
catalog    the registered tasks        readers   TSV/CSV/JSONL files and the Hub into `datasets`
builders   tasks that need building    splits    caps, re-splits, stratified and selection splits
tasks      `load_task`, `resolve_task` corpora   unlabelled text for masked-LM pretraining
encoding   token ids for training      metrics   the papers' metrics, in points
describe   a task at a glance
"""

from adaptstudy.data import catalog  # noqa: F401  (registers the tasks)
from adaptstudy.data.errors import DataNotFoundError, MalformedDataError
from adaptstudy.data.spec import TASKS, TaskSpec, register_task, resolve_task

LOADING = ("load_task", "resolve_data_dir")  # from `tasks`, which imports `datasets`: on first use


def __getattr__(name: str):
    """`load_task` and its kin import `datasets` when first asked for, so what reads only task specs and metrics
    (the report) never loads it."""
    if name in LOADING:
        from adaptstudy.data import tasks

        return getattr(tasks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TASKS",
    "DataNotFoundError",
    "MalformedDataError",
    "TaskSpec",
    "load_task",
    "register_task",
    "resolve_data_dir",
    "resolve_task",
]
