"""The multi-task model: one shared encoder, a classifier per task, each batch from one task (Hyperformer's
setting, also AdapterFusion's multi-task adapter)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from adaptstudy.data.spec import TaskSpec


class MultiTaskModel(nn.Module):
    """A shared encoder (`bert`, a `BertModel`, its pooler part of the head) and one classifier per task.
    Every batch is from one task, named by `task_ids`; with hypernetworks, that task's adapters apply."""

    def __init__(self, bert: nn.Module, specs: Mapping[str, TaskSpec]):
        super().__init__()
        self.bert, self.task_names, self.specs = bert, list(specs), dict(specs)
        self.dropout = nn.Dropout(bert.config.hidden_dropout_prob)
        self.heads = nn.ModuleDict({t: nn.Linear(bert.config.hidden_size, s.num_labels) for t, s in specs.items()})
        for head in self.heads.values():
            bert._init_weights(head)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, task_ids=None, labels=None):
        if task_ids is None or not bool((task_ids == task_ids[0]).all()):
            raise ValueError("every example of a batch must be from the same task (task_ids)")
        task = self.task_names[int(task_ids[0])]
        hypernetworks = getattr(self.bert, "hypernetworks", None)
        if hypernetworks is not None:
            hypernetworks.select(task)
        select_task = getattr(self.bert, "select_task", None)  # an adapter per task (MT-A)
        if select_task is not None:
            select_task(task)
        pooled = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).pooler_output
        logits = self.heads[task](self.dropout(pooled))
        loss = None
        if labels is not None:
            if self.specs[task].is_regression:
                loss = nn.functional.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = nn.functional.cross_entropy(logits.float(), labels.long())
        return SequenceClassifierOutput(loss=loss, logits=logits)
