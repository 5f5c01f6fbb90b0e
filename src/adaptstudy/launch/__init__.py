"""What starts runs: sweep grids (`sweep`, also `python -m adaptstudy.sweep`; each cell as `cells.attempt` runs it,
in process or as a Ray task: `ray_sweep`), the notebooks' parameters (`notebook`) and their Colab cell and links
(`colab`), and the Makefile's command-line helpers (`cli`)."""
