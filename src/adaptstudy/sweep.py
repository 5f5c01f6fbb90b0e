"""`python -m adaptstudy.sweep GRID [...]`: the documented entry point of sweeps (`adaptstudy.launch.sweep`)."""

import sys

from adaptstudy.launch.sweep import main

if __name__ == "__main__":
    sys.exit(main())
