"""``python -m csup_async.cli``: the ``csup-async`` command."""

import sys

from . import main

sys.exit(main())
