"""The training layer: one core (`core`: arguments, resume, checkpoints, the non-finite stop, the record) and
its callers (`finetune`, `pretrain`, `multitask`), what a run starts from (`starting_point`), AdapterFusion's
files (`fusion`), and `runner.run`, which trains what a run needs first."""
