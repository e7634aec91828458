"""`python -m trnspec`."""

import sys

from trnspec.cli.main import main

sys.exit(main())
