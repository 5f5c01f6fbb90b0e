"""The Houlsby et al. (2019) chapter, from the records of study `houlsby`: its tables (`tables`: the learning rates
chosen, Table 1, adapter sizes, costs, the published tables not run offline) and its claims with the figures behind
them (`claims`: the parameter/performance trade-off, the layer ablation, the initialisation scale)."""
