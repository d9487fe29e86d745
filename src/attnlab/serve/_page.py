"""The lab's page: one HTML document, offline, whose script is the viewer's own (``attnlab/viz/assets``) followed by
``assets/lab.js`` inside the same strict-mode function, and whose style is the viewer's CSS and ``assets/lab.css``.

Its Content-Security-Policy is the static viewer's (the page's own script and style by hash, nothing else, no
inline handlers, no plug-ins, no base or form targets) plus ``connect-src 'self'`` for the API and
``frame-ancestors 'none'`` so that no other site can frame it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["csp", "page", "script", "style"]


def _read(package: str, name: str) -> str:
    return (resources.files(package) / "assets" / name).read_text(encoding="utf-8")


@cache
def script() -> str:
    from ..viz.html import viewer_script

    return viewer_script(_read("attnlab.serve", "lab.js"))


@cache
def style() -> str:
    from ..viz.html import viewer_style

    return viewer_style(_read("attnlab.serve", "lab.css"))


@cache
def csp() -> str:
    """The page's Content-Security-Policy header."""
    from ..viz.html import csp_hash

    return (f"default-src 'none'; script-src '{csp_hash(script())}'; style-src '{csp_hash(style())}'; "
            "img-src data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@cache
def page() -> str:
    """The lab's HTML (the same for every request; what it shows comes from the API)."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        "<title>attnlab lab</title>\n"
        f"<style>{style()}</style>\n</head>\n<body>\n"
        '<main id="attnlab-lab"><noscript>The attnlab lab needs JavaScript.</noscript></main>\n'
        f"<script>{script()}</script>\n</body>\n</html>\n"
    )
