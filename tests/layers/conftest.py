"""Make the float64 references next to these tests importable as ``layers_reference``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
