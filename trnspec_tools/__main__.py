"""`python -m trnspec_tools ...`: see trnspec_tools.cli."""

import sys

from trnspec_tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
