"""What a topic returns (:class:`Finding`) and how its figures are written (:func:`write_figures`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The tutorials, by title; topics cite them by these keys.
TUTORIALS = {
    "essence": "注意力机制的本质与计算原理",
    "panorama": "万字深度解析注意力机制全景",
    "math": "第二章：注意力机制的数学原理",
    "spotlight": "LLM 的“聚光灯”：彻底搞懂 Attention 机制",
    "visual": "注意力机制可视化原理与代码实战案例讲解",
}


@dataclass(frozen=True)
class Finding:
    """One topic's result: the measured numbers, the verdict they give, the printed lines, the figures.

    ``figures`` maps a file stem to a function that draws it, so computing a topic costs no drawing;
    :func:`write_figures` (or ``attnlab explain TOPIC``) draws and saves them."""

    topic: str
    verdict: str  # one line, built from the numbers
    numbers: Mapping[str, Any]  # every measured value the verdict rests on
    lines: tuple[str, ...]  # the report, as printed by `attnlab explain TOPIC`
    figures: Mapping[str, Callable[[], Figure]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join((f"{self.topic}: {self.verdict}", "", *self.lines))

    def __str__(self) -> str:
        return self.text


def write_figures(finding: Finding, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Draw every figure of ``finding`` as PNG into ``out_dir`` (created if missing), all or nothing.

    The figures are drawn into a temporary folder next to ``out_dir`` and moved in only when all of them
    are written, so a failure leaves no partial file.  Returns the paths written."""
    from ..viz import save

    out = Path(out_dir)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        staged = []
        for stem, draw in finding.figures.items():
            staged.append(save(draw(), stage / f"{stem}.png"))
        out.mkdir(exist_ok=True)
        written = []
        for p in staged:
            os.replace(p, out / p.name)
            written.append(out / p.name)
        return written
    finally:
        shutil.rmtree(stage, ignore_errors=True)
