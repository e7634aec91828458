"""`python scripts/demo.py` = `python -m trnspec_tools demo`: the documented command
line, kept. The code is trnspec_tools/demo.py; this file only runs it."""

import sys
from pathlib import Path

# Run from a checkout, the package sits next to scripts/ (sys.path[0] is scripts/ itself).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trnspec_tools.demo import main

if __name__ == "__main__":
    sys.exit(main())
