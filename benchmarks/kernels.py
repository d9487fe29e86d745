"""The kernel benchmark as a script: the same as ``attnlab bench`` (the logic lives in attnlab.bench).

    python benchmarks/kernels.py --quick --out bench-quick
"""

from __future__ import annotations

import sys

from attnlab.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
