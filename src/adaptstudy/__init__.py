"""adaptstudy: a notebook-first reproduction study of adapters and parameter-efficient fine-tuning.

Subpackages follow the data flow, each importing only those below it (checked by import-linter):
`common` < `data` < `models` < `runs` < `training` < `launch`, `reporting` < `sweep`, `planning`. The report reads
records only: it imports nothing that builds or trains a model.
"""
