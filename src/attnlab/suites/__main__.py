"""``python -m attnlab.suites FOLDER [SUITE]``: write the suite's pass rates into ``FOLDER/final.json``
(:func:`attnlab.suites.record_pass_rates`); the maintainers' step after training a bundled model."""

from __future__ import annotations

import sys

from ..errors import AttnLabError
from ._run import record_pass_rates


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m attnlab.suites FOLDER [SUITE]", file=sys.stderr)
        return 2
    try:
        record = record_pass_rates(*argv)
    except AttnLabError as exc:
        print(f"attnlab.suites: error: {exc}", file=sys.stderr)
        return 2
    rates = ", ".join(f"{cap} {r['passed']}/{r['n']}" for cap, r in record["capabilities"].items())
    print(f"{argv[0]}/final.json: {record['passed']}/{record['cases']} passed ({rates})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
