"""What a run is and what it leaves: validated settings with a stable identity (`base`, `finetune_config`,
`pretrain_config`, `multitask_config`, `notebook_params`), pretraining artifacts, and result records."""
