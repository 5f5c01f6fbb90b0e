"""`python -m adaptstudy.launch.freeze_prerequisites GRID [--study STUDY]`: before a confirmatory grid runs, train
what its cells start from (where this machine's cache lacks it) and freeze it into the project (`frozen/`, with its
hash: `runs.frozen_artifacts`), so that the grid's runs build on the same weights on every machine.

Freeze the prerequisites, commit `frozen/`, freeze the claims again (`reporting.amend --freeze --refreeze`, the
weights named in the reason), and only then run the grid: a run whose prerequisite hashes otherwise is another
treatment, never a confirmatory run. Prerequisites frozen already are checked against their hash and kept.
"""

from __future__ import annotations

import argparse
import sys

from adaptstudy.launch.allocator import reexec_with_allocator
from adaptstudy.runs.base import ConfigError
from adaptstudy.runs.frozen_artifacts import FrozenArtifactError, checked_copy, freeze, frozen_hash
from adaptstudy.runs.grid import grid_configs


def freeze_grid(sweep: str, study: str | None = None) -> list[tuple[str, str, str]]:
    """(run id, what, sha256) of every prerequisite of the grid's cells, each trained first where needed and
    frozen (or checked, where it was frozen already), in the grid's order, each once."""
    from adaptstudy.training.runner import ensure, prerequisites

    grid, _, configs = grid_configs(sweep)
    done: dict[str, tuple[str, str, str]] = {}
    for config in configs:
        for needed in prerequisites(config):
            run_id = needed.config.run_id
            if run_id in done:
                continue
            if frozen_hash(run_id) is not None:
                checked_copy(run_id)
            else:
                ensure(config, only=run_id)
                freeze(run_id, needed.artifact(), study or grid.study, needed.what)
            done[run_id] = (run_id, needed.what, frozen_hash(run_id))
    return list(done.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", help="the confirmatory grid whose cells' prerequisites to freeze")
    parser.add_argument("--study", help="the study whose records name them (default: the grid's)")
    args = parser.parse_args(argv)
    try:
        frozen = freeze_grid(args.sweep, args.study)
    except (ConfigError, FrozenArtifactError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for run_id, what, digest in frozen:
        print(f"{run_id} ({what}): sha256 {digest}")
    print(f"{len(frozen)} prerequisites frozen under frozen/: commit them before the grid runs")
    return 0


if __name__ == "__main__":
    reexec_with_allocator("adaptstudy.launch.freeze_prerequisites", sys.argv[1:])  # training under tcmalloc
    sys.exit(main())
