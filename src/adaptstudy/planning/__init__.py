"""Planning the runs: each chapter's stage-2 grid from its stage-1 records, and the confirmatory allocation.

Planners build run configs (and so import the training stack); the report never imports them.
"""

import adaptstudy.models.methods  # noqa: F401  (registers the methods' facts, which the run configs read)
