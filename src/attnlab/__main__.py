"""``python -m attnlab``: the same command line as the ``attnlab`` script (:func:`attnlab.cli.main`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
