"""The runtime dependencies of pyproject.toml at their declared floors, for `make test-floor`: the core
`dependencies` and those of every runtime extra (the extras that the `all` extra names, `attnlab[hf,...]`).

    python3 .ci/floors.py [pyproject.toml]          print pip constraints `name==floor`, one a line
    python3 .ci/floors.py --check [pyproject.toml]  exit 1 unless the running Python has every floor
                                                    installed exactly (run it with the floor venv's Python)

`make test-floor` installs attnlab with these (and constraints.txt's torch pin) into a second venv,
checks them, and runs the tests there, so a floor that is not true fails CI instead of a user's install.
torch is left out: constraints.txt pins the CPU build on disk, the only torch the floor run can install.
This script needs Python >= 3.11 (tomllib), which `python3` is on CI.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib

PINNED = {"torch"}  # by constraints.txt


def runtime_requirements(project: dict) -> list[str]:
    """The core dependencies, then those of each extra that `all` names (`attnlab[hf,analysis,...]`)."""
    extras = project.get("optional-dependencies", {})
    named: list[str] = []
    for requirement in extras.get("all", []):
        m = re.fullmatch(r"\s*attnlab\[([A-Za-z0-9_,\s-]+)\]\s*", requirement)
        if m is None:
            sys.exit(f"floors.py: the `all` extra holds {requirement!r}; it names attnlab's runtime extras only")
        named += [name.strip() for name in m.group(1).split(",")]
    return [*project["dependencies"], *(r for name in named for r in extras[name])]


def floors(pyproject: Path) -> dict[str, str]:
    """{name: floor} of every runtime dependency but the pinned ones; each must be a plain `name>=version`."""
    project = tomllib.loads(pyproject.read_text())["project"]
    out = {}
    for requirement in runtime_requirements(project):
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([^,;\s]+)\s*", requirement)
        if m is None:
            sys.exit(f"floors.py: {requirement!r} has no plain '>=' floor; declare one as `name>=version`")
        name, floor = m.groups()
        if name not in PINNED:
            out[name] = floor
    return out


def check(wanted: dict[str, str]) -> int:
    """Print each dependency's floor and installed version; 1 when any differs (as versions: 1.10 == 1.10.0)."""
    from packaging.version import InvalidVersion, Version  # in the floor venv: transformers depends on it

    def same(installed: str, floor: str) -> bool:
        try:
            return Version(installed) == Version(floor)
        except InvalidVersion:
            return installed == floor

    bad = 0
    for name, floor in wanted.items():
        ok = same(_installed(name), floor)
        bad += not ok
        mark = "" if ok else "   <-- not the floor"
        print(f"{name:24} floor {floor:10} installed {_installed(name)}{mark}")
    for name in sorted(PINNED):
        print(f"{name:24} pinned by constraints.txt, installed {_installed(name)}")
    return 1 if bad else 0


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--check"]
    wanted = floors(Path(args[0] if args else "pyproject.toml"))
    if "--check" in argv:
        return check(wanted)
    for name, floor in wanted.items():
        print(f"{name}=={floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
