"""``python -m workbench.cli``: the ``workbench`` command (importing this module runs nothing)."""

import sys

from workbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
