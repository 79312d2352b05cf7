"""``python -m dagctx``: the ``dagctx`` command, as ``python -m dagctx.cli`` runs it."""

import sys

from dagctx.cli import main

sys.exit(main())
