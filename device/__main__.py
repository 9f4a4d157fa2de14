"""``python -m device`` runs the ``robot-face`` command line."""

import sys

from device.cli import main

sys.exit(main())
