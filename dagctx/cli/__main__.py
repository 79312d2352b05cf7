"""``python -m dagctx.cli``: the ``dagctx`` command."""

import sys

from dagctx.cli import main

sys.exit(main())
