"""Print pip constraints that pin every runtime dependency of pyproject.toml to its declared floor.

`make test-floor` installs attnlab with these (and constraints.txt's torch pin) into a second venv
and runs the tests there, so a floor that is not true fails CI instead of a user's install.
"""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads(Path(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"]:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([^,;\s]+)\s*", requirement)
    if m is None:
        sys.exit(f"floors.py: {requirement!r} has no plain '>=' floor; declare one")
    name, floor = m.groups()
    if name != "torch":  # torch stays pinned by constraints.txt (the CPU build)
        print(f"{name}=={floor}")
