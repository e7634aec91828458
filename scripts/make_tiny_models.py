"""`python scripts/make_tiny_models.py` = `python -m trnspec_tools models`: the documented command
line, kept. The code is trnspec_tools/local_engine/make_tiny_models.py; this file only runs it."""

import sys
from pathlib import Path

# Run from a checkout, the package sits next to scripts/ (sys.path[0] is scripts/ itself).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trnspec_tools.local_engine.make_tiny_models import main

if __name__ == "__main__":
    sys.exit(main())
