"""One line per figure, printed the same way by every bench, for `bench/all.py` to collect.

A bench prints its own detail as it likes, and each figure a reader would compare once more as
`figure: <name> = <value>`; `bench/all.py` runs the benches and puts those lines side by side.
"""

from __future__ import annotations

import re

PREFIX = "figure: "
LINE = re.compile(rf"^{PREFIX}(.+?) = (.+)$", re.MULTILINE)


def figure(name: str, value: str) -> None:
    """Print one figure: `name` says what and where, `value` the measurement with its unit."""
    print(f"{PREFIX}{name} = {value}", flush=True)


def figures_in(output: str) -> list[tuple[str, str]]:
    """The (name, value) figures a bench printed, in order."""
    return LINE.findall(output)
