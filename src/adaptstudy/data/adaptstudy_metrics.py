"""The project's task metrics as an `evaluate` module, loaded from this file's path (offline): `evaluate.load(path,
config_name="classification" | "regression")`, then `.compute(predictions=..., references=..., metric_names=[...])`.

It computes with `adaptstudy.data.metrics` (scikit-learn and scipy), so its values are the project's, in points;
`evaluate.load("glue", task)` fetches GLUE's own script from the Hub and gives the same numbers (tested where the
Hub is reachable).
"""

import datasets
import evaluate

from adaptstudy.data.metrics import METRICS, compute_metrics

_KINDS = {"classification": "int64", "regression": "float64"}


class AdaptstudyMetrics(evaluate.Metric):
    def _info(self):
        if self.config_name not in _KINDS:
            raise KeyError(f"unknown config {self.config_name!r}; valid: {sorted(_KINDS)}")
        kind = _KINDS[self.config_name]
        return evaluate.MetricInfo(
            description=f"adaptstudy task metrics, in points: {', '.join(METRICS)}",
            citation="",
            inputs_description="predictions and references; metric_names: which metrics to compute",
            features=datasets.Features({"predictions": datasets.Value(kind), "references": datasets.Value(kind)}),
        )

    def _compute(self, predictions, references, metric_names=("accuracy",)):
        return compute_metrics(list(metric_names), predictions, references)
