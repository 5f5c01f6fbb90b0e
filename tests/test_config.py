import pytest

from adaptstudy.launch.notebook import parameters
from adaptstudy.runs.base import ConfigError, validate
from adaptstudy.runs.finetune_config import FinetuneConfig
from adaptstudy.training.config_checks import check_config, checked
from adaptstudy.training.runner import run


def test_run_id_is_stable_and_changes_with_any_setting():
    a = FinetuneConfig(task="mrpc", method="houlsby", adapter_size=64)
    assert a.run_id == FinetuneConfig(task="mrpc", method="houlsby", adapter_size=64).run_id
    # defaults resolved: an explicit default is the same run
    assert a.run_id == FinetuneConfig(task="mrpc", method="houlsby", adapter_size=64, learning_rate=1e-3).run_id
    assert a.run_id != FinetuneConfig(task="mrpc", method="houlsby", adapter_size=8).run_id
    assert a.run_id != FinetuneConfig(task="mrpc", method="houlsby", adapter_size=64, seed=1).run_id
    # where data and results live is not part of the run
    assert (
        a.run_id
        == FinetuneConfig(task="mrpc", method="houlsby", adapter_size=64, data_dir="/x", results_dir="/y").run_id
    )


def test_adapter_methods_get_their_default_size():
    assert FinetuneConfig(method="houlsby").resolved().adapter_size == 64
    assert FinetuneConfig(method="full").resolved().adapter_size is None


@pytest.mark.parametrize(
    "values, message",
    [
        ({"lerning_rate": 1e-3}, r"unknown parameter 'lerning_rate' \(did you mean 'learning_rate'\?\)"),
        ({"method": "full", "adapter_size": 64}, r"adapter_size=64 does not apply to method 'full'"),
        ({"num_train_epochs": "three"}, r"parameter num_train_epochs: .*\(got 'three'\)"),
        ({"batch_size": 0}, r"parameter batch_size: Input should be greater than or equal to 1"),
        ({"task": "imbd"}, r"unknown task 'imbd' \(did you mean 'imdb'\?\); valid: acl-arc"),
        ({"backbone": "minilm"}, r"unknown backbone 'minilm' .*valid: .*minilm-l6"),
    ],
)
def test_bad_parameters_are_one_clear_error(values, message):
    """A wrong name, type or value is one error before any work: the config's own, or a registry's (the checks every
    way in makes)."""
    with pytest.raises(ConfigError, match=message):
        checked(FinetuneConfig, values)


def test_run_configs_are_data_that_hold_a_wrong_task_name_until_the_checks_refuse_it():
    """The config knows no registry of tasks or backbones (`runs/` imports nothing from `data/` or `models/`);
    the notebook parameters, the sweep and the runner check it before any work."""
    config = validate(FinetuneConfig, {"task": "imbd"})
    with pytest.raises(ConfigError, match="unknown task 'imbd'"):
        check_config(config)
    with pytest.raises(ConfigError, match="unknown task 'imbd'"):
        parameters({"task": "imbd"}, set(), FinetuneConfig)
    with pytest.raises(ConfigError, match="unknown task 'imbd'"):
        run(config, write=False)


def test_notebook_parameters_reject_undeclared_names():
    declared = {"In", "Out", "task", "seed"}
    namespace = {"In": [], "Out": {}, "task": "mrpc", "seed": 3, "sed": 4, "_private": 1}
    with pytest.raises(ConfigError, match=r"unknown notebook parameter 'sed' \(did you mean 'seed'\?\)"):
        parameters(namespace, declared, FinetuneConfig)
    del namespace["sed"]
    config = parameters(namespace, declared, FinetuneConfig)
    assert (config.task, config.seed) == ("mrpc", 3)


def test_notebook_parameters_take_any_setting_of_the_model_and_validate_again_on_a_rerun():
    declared = {"In", "Out", "task", "seed"}
    namespace = {"In": [], "Out": {}, "task": "mrpc", "seed": 3, "data_seed": 2, "precision": "fp32"}
    config = parameters(namespace, declared, FinetuneConfig)  # settings the parameters cell does not declare
    assert (config.data_seed, config.precision) == (2, "fp32")
    # the cell re-run in Jupyter: later cells assigned names of their own, the user changed a value
    namespace.update(config=config, record={}, seed=4)
    assert parameters(namespace, declared, FinetuneConfig).seed == 4
    namespace["seed"] = "four"
    with pytest.raises(ConfigError, match=r"notebook parameter seed"):
        parameters(namespace, declared, FinetuneConfig)
