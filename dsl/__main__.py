"""`python -m shardc ...` runs the command line, as the `shardc` script does."""

import sys

from shardc.cli import main

sys.exit(main())
