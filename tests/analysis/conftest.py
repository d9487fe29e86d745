"""Make the tiny models next to these tests importable as ``analysis_models``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
