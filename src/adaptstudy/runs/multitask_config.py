"""The settings of one multi-task run (or, with one task, a single-task run under the same rules), as data: the
tasks, the method, temperature sampling, and the Hyperformer paper's splits and model selection (names of tasks and
backbones are checked before any work, in `training.config_checks`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, model_validator

from adaptstudy.common.paths import cache_root
from adaptstudy.runs.base import TrainingRun, validate
from adaptstudy.runs.method_catalog import method_facts, refuse_foreign_settings
from adaptstudy.runs.method_settings import neutral_settings, settings_for

LEGACY_SPLIT_RULES = {"selection": True, "hyperformer": False}


class MultiTaskConfig(TrainingRun, *settings_for("multitask")):
    """One multi-task (or, with one task, single-task) run under the paper's splits and selection; the settings only
    some methods take are their families' (`models/methods`: `settings`), inherited."""

    OUT_OF_RUN_ID: ClassVar[dict[str, Any]] = {  # the run's own settings added later; the methods' are their families'
        "adam_beta2": 0.999,
        "adam_epsilon": 1e-8,
        "selection_split": False,
        **neutral_settings("multitask"),
    }
    RENAMED: ClassVar[frozenset[str]] = frozenset({"split_rule"})
    STUDY: ClassVar[str] = "multitask"

    tasks: tuple[str, ...] = Field(min_length=1, description="registered task names")
    method: str = "hyperformer++"
    num_train_epochs: float = Field(3.0, gt=0, description="passes of sum-over-tasks examples / batch size batches")
    max_train_examples: int | None = Field(None, gt=0, description="per task, after the model-selection hold-out")
    max_eval_examples: int | None = Field(
        None, gt=0, description="per task, cap on each of validation and test (seeded)"
    )
    temperature: float = Field(10.0, ge=1.0, description="task sampling: p_t ∝ n_t^(1/T)")
    selection_split: bool = Field(
        False,
        description="False: the Hyperformer paper's split rule (a task under 10k training examples gives half its dev "
        "set for validation, half as the test set); True: the selection split carved from training (FewGLUE: its "
        "dev32) validates and the dev set is the test set, as single-task runs with `selection_split` see them "
        "(AdapterFusion's MT-A beside its single-task columns)",
    )
    eval_every_epochs: int = Field(
        1,
        ge=1,
        description="score validation and test every this many epochs (and after the "
        "last): few-shot runs take many short epochs",
    )
    data_seed: int = 0
    eval_batch_size: int = Field(128, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _legacy_split_rule(cls, values: Any) -> Any:
        """Runs made before the selection split had one name across run kinds said `split_rule: selection` (or
        `hyperformer`): read as `selection_split`, so their params files and records' settings still validate."""
        if not isinstance(values, dict) or "split_rule" not in values:
            return values
        values = dict(values)
        rule = values.pop("split_rule")
        if rule not in LEGACY_SPLIT_RULES or "selection_split" in values:
            raise ValueError(
                f"split_rule={rule!r} is the old spelling of selection_split (split_rule 'selection': true, "
                "'hyperformer': false); give selection_split alone"
            )
        values["selection_split"] = LEGACY_SPLIT_RULES[rule]
        return values

    @model_validator(mode="after")
    def _known_names(self) -> MultiTaskConfig:
        method = method_facts(self.method)
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be distinct, got {list(self.tasks)}")
        refuse_foreign_settings(self, self.method)
        if method.uses_top_k:
            raise ValueError(f"method {self.method!r} is not offered for multi-task runs")
        if self.transfer_from is not None:
            source = self.source()
            if source.method != self.method or source.backbone != self.backbone:
                raise ValueError(
                    f"transfer_from needs the same Hyperformer method and backbone as the source run "
                    f"({source.method}, {source.backbone}), got {self.method}, {self.backbone}"
                )
            shared = set(self.tasks) & set(source.tasks)
            if shared:
                raise ValueError(f"transfer is to new tasks; the source run already trained {sorted(shared)}")
        return self

    def source(self) -> MultiTaskConfig:
        """The multi-task run a transfer starts from."""
        return validate(MultiTaskConfig, self.transfer_from, what="transfer_from setting").resolved()

    @property
    def task_name(self) -> str:
        return "+".join(self.tasks)

    def resolved(self) -> MultiTaskConfig:
        method, updates = method_facts(self.method), {}
        if self.learning_rate is None:
            updates["learning_rate"] = method.default_learning_rate
        if method.uses_adapter_size and self.adapter_size is None:
            updates["adapter_size"] = method.default_adapter_size
        return self.model_copy(update=updates)

    def refine_identity(self, identity: dict[str, Any]) -> dict[str, Any]:
        identity["kind"] = "multitask"
        if identity.pop("selection_split", False):
            identity["split_rule"] = "selection"  # the spelling committed run ids were made with
        if self.transfer_from is not None:
            identity["transfer_from"] = self.source().run_id
        return identity

    def artifact_dir(self) -> Path:
        return cache_root() / "multitask" / self.run_id

    def encoder_folder(self) -> Path:
        """method task_adapters: the trained encoder without its adapters, a model folder `from_pretrained` reads."""
        return self.artifact_dir() / "encoder"

    def task_adapter_folders(self) -> dict[str, Path]:
        """method task_adapters: each task's trained adapter, in the `adapters` format."""
        return {task: self.artifact_dir() / "adapters" / task for task in self.tasks}
