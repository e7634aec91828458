"""`python -m trnspec`."""

import sys

from trnspec.cli import main

sys.exit(main())
