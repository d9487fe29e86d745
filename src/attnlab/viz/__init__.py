"""Drawing attention: static matplotlib figures and a text summary.

    >>> import attnlab as al
    >>> fig = al.viz.heatmap(trace, layer=0, head=3)     # matplotlib Figure, keys along x
    >>> al.viz.save(fig, "head.png")                     # .png, .svg or .pdf, written atomically

Everything loads on first use, so ``import attnlab`` never imports matplotlib.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._alignment import alignment as alignment
    from ._first import FIRST_HEAD as FIRST_HEAD
    from ._first import FIRST_LAYER as FIRST_LAYER
    from ._first import difference as difference
    from ._first import first_view as first_view
    from ._fonts import families as families
    from ._grid import model_grid as model_grid
    from ._heads import heads as heads
    from ._heatmap import heatmap as heatmap
    from .html import compare_html as compare_html
    from .html import save_html as save_html
    from .html import to_html as to_html
    from .static import save as save
    from .summary import one_line as one_line
    from .summary import summarize as summarize

# public name -> the submodule that defines it (imported on first access)
_LAZY = {
    "alignment": "_alignment",
    "FIRST_HEAD": "_first",
    "FIRST_LAYER": "_first",
    "difference": "_first",
    "first_view": "_first",
    "heatmap": "_heatmap",
    "heads": "_heads",
    "model_grid": "_grid",
    "save": "static",
    "save_html": "html",
    "compare_html": "html",
    "to_html": "html",
    "summarize": "summary",
    "one_line": "summary",
    "families": "_fonts",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attnlab.viz' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
