"""``python3 -m dml_core.gpu_check``: see ``dml_core.gpu_check.cli``."""

import sys

from dml_core.gpu_check.cli import main

sys.exit(main())
