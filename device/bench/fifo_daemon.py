"""``python -m device.bench.fifo_daemon run ...``: ``robot-face`` with the plain FIFO inbox.

The baseline of ``robot-face bench control``'s backlog case: every input stepped in arrival order, as
before the control-first inbox. Not a setting of the daemon: only the benchmark starts it.
"""

import sys

from device.cli import main
from device.shell.runtime import Runtime

Runtime.control_first = False
sys.exit(main(sys.argv[1:]))
