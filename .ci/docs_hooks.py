"""mkdocs hooks (mkdocs.yml `hooks:`). A link from a page of docs/ to a file of the source tree outside docs/
(``../benchmarks/results/serve.md``, ``../src/attnlab/_bundled/...``) has no page on the site; it is shown as that
file's path in the source tree, in code, instead of a link that would break. Links inside docs/ are left to mkdocs,
which checks them (--strict)."""

from __future__ import annotations

import re
from typing import Any

OUTSIDE = re.compile(r"(!?)\[([^\]]*)\]\(((?:\.\./)+)([^)#\s]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    depth = page.file.src_uri.count("/")  # a page in docs/reports/ climbs one more level to the root

    def rewrite(m: re.Match[str]) -> str:
        bang, text, ups, path, _anchor = m.groups()
        if ups.count("../") <= depth:  # still inside docs/
            return m.group(0)
        shown = f"`{path}`"
        return shown if text.strip("`") == path else f"{text} ({shown} in the source tree)"

    return OUTSIDE.sub(rewrite, markdown)


# The docstrings name other objects in Sphinx's roles (:func:`attnlab.capture`), which mkdocstrings' Markdown shows as
# ":func:" before the code: the role is dropped, the code kept.
ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj|const|math):(?=<code>)")


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    return ROLE.sub("", html)
