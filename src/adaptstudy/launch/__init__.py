"""What starts runs: sweep grids (`sweep`, also `python -m adaptstudy.sweep`), the notebooks' parameters
(`notebook`), and the Makefile's command-line helpers (`cli`)."""
