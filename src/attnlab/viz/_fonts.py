"""Fonts for token labels: DejaVu Sans for Latin text, a CJK font as a per-glyph fallback.

matplotlib's default font has no Chinese, Japanese or Korean glyphs, so such tokens draw as empty
boxes.  :func:`families` returns ``["DejaVu Sans", <a CJK font>]``; matplotlib (3.6+) takes each glyph
from the first font of that list that has it, in PNG, SVG and PDF alike.  The CJK font is found
through ``matplotlib.font_manager``: first among the fonts matplotlib already knows, then among the
system's font files (a font installed after matplotlib built its cache).  On Debian,
``apt-get install fonts-wqy-zenhei`` provides one (the Makefile's ``system`` target does it).
Without any, labels still draw (as boxes) and :func:`check_glyphs` warns once.
"""

from __future__ import annotations

import functools
import logging
import re
import warnings
from collections.abc import Iterable

__all__ = ["BASE_FAMILY", "CJK_FAMILIES", "check_glyphs", "cjk_family", "families", "font_covers"]

BASE_FAMILY = "DejaVu Sans"  # ships with matplotlib, so always present

# Fonts that cover CJK ideographs, best first (Debian/Ubuntu, then macOS and Windows names).
CJK_FAMILIES = (
    "WenQuanYi Zen Hei",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Droid Sans Fallback",
    "AR PL UMing CN",
    "WenQuanYi Micro Hei",
    "PingFang SC",
    "Heiti SC",
    "Microsoft YaHei",
    "SimHei",
    "Arial Unicode MS",
)
# File names of such fonts, for fonts installed after matplotlib built its font cache.
_CJK_FILE = re.compile(r"wqy|cjk|droidsansfallback|uming|ukai|sourcehan|notosanssc|simhei|msyh|pingfang", re.I)
_PROBE = "我的"  # two common ideographs a CJK font must have

_warned = False


def font_covers(family: str, text: str) -> bool:
    """Whether the font matplotlib picks for ``family`` has a glyph for every character of ``text``."""
    from matplotlib import font_manager

    path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    return not _missing_from(path, text)


def _missing_from(path: str, text: str) -> set[str]:
    charmap = _charmap(path)
    return {c for c in text if not c.isspace() and ord(c) not in charmap}


@functools.cache
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(path).get_charmap())


@functools.cache
def cjk_family() -> str | None:
    """The name of an installed font with CJK glyphs, or None when there is none."""
    from matplotlib import font_manager

    fm = font_manager.fontManager

    def known() -> str | None:
        names = {f.name: f.fname for f in fm.ttflist}
        for name in CJK_FAMILIES:
            if name in names and not _missing_from(names[name], _PROBE):
                return name
        return None

    found = known()
    if found is None:  # a font installed after matplotlib cached its list: register the files
        for path in font_manager.findSystemFonts():
            if _CJK_FILE.search(path.replace("-", "").replace("_", "")):
                try:
                    fm.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        found = known()
    if found is not None:
        # CJK fonts often come in weight 500 only; matplotlib then logs a warning on every new size.
        logging.getLogger("matplotlib.font_manager").addFilter(
            lambda rec: not (rec.getMessage().startswith("findfont: Failed to find font weight") and found in
                             rec.getMessage())
        )
    return found


def families() -> list[str]:
    """The font family list for labels: the base font, then a CJK fallback when one is installed."""
    cjk = cjk_family()
    return [BASE_FAMILY, cjk] if cjk else [BASE_FAMILY]


def check_glyphs(texts: Iterable[str]) -> None:
    """Warn (once per process) when some characters of ``texts`` have no glyph in the available fonts."""
    global _warned
    if _warned:
        return
    from matplotlib import font_manager

    text = "".join(texts)
    missing: set[str] | None = None
    for family in families():
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        gone = _missing_from(path, text)
        missing = gone if missing is None else missing & gone
    if missing:
        _warned = True
        sample = "".join(sorted(missing)[:10])
        warnings.warn(
            f"no installed font has glyphs for {sample!r} (and {max(0, len(missing) - 10)} more); those characters "
            f"will draw as boxes. Install a CJK font, e.g. `apt-get install fonts-wqy-zenhei` on Debian/Ubuntu, "
            f"then run again",
            UserWarning,
            stacklevel=3,
        )
