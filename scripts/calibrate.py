"""`python scripts/calibrate.py {run,fetch,local}` = `python -m trnspec_tools calibrate ...`: the
code is trnspec_tools/calibration/; this file only runs it."""

import sys
from pathlib import Path

# Run from a checkout, the package sits next to scripts/ (sys.path[0] is scripts/ itself).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trnspec_tools.calibration.command import main

if __name__ == "__main__":
    sys.exit(main())
