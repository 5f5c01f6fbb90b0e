"""AdapterFusion's multi-task adapters (MT-A, Pfeiffer et al. 2021): one seq_bn adapter per task, trained jointly
with the whole encoder on every task's batches, each batch through its own task's adapter. The shared encoder is
what lets tasks help each other (the paper's RTE: 71.0 with single-task adapters, 77.6 with MT-A); Fusion w/ MT-A
then combines these adapters over that encoder (`FinetuneConfig.fusion_from`)."""

from __future__ import annotations

from adapters import SeqBnConfig
from torch import nn

from adaptstudy.models.adapter_interfaces import init_adapters
from adaptstudy.models.methods.base import adapter_name, check_adapter_widths, reduction_factor


def add_task_adapters(model: nn.Module, config) -> nn.Module:
    """`prepare` of method `task_adapters`: an adapter per task of the run (`tasks`, else its one task), the first
    active; `model.select_task(task)` makes a task's the active one (the multi-task model calls it per batch)."""
    init_adapters(model)
    tasks = tuple(getattr(config, "tasks", None) or (config.task_name,))
    for task in tasks:
        model.add_adapter(
            adapter_name(task),
            config=SeqBnConfig(
                reduction_factor=reduction_factor(model.config.hidden_size, config.adapter_size),
                init_weights_seed=config.seed,
            ),
        )
    check_adapter_widths(model, config.adapter_size)
    model.select_task = lambda task: model.set_active_adapters(adapter_name(task))
    model.select_task(tasks[0])
    return model
