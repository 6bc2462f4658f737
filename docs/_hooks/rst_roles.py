"""A griffe extension for the API pages: the docstrings' reStructuredText roles as Markdown.

The library's docstrings are numpydoc with Sphinx roles (``:math:`\\alpha```, ``:class:`X```,
``.. math::`` blocks). mkdocstrings renders docstrings as Markdown, so before they are parsed
this rewrites ``:math:`X``` to ``$X$`` and a ``.. math::`` block to ``$$ ... $$`` (typeset by
MathJax through ``pymdownx.arithmatex``), and the cross-reference roles (``:class:``,
``:func:``, ``:mod:`` …) to code spans. Only the rendered pages change: the docstrings stay as
they are (mkdocs.yml loads this file in the mkdocstrings options).
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_XREF_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|obj|exc|const):`~?([^`]+)`")
_MATH_BLOCK = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$")


def _math_blocks(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _MATH_BLOCK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("first").strip()] if m.group("first").strip() else []
        i += 1
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)
        ):
            body.append(lines[i].strip())
            i += 1
        while body and not body[-1]:
            body.pop()
        out.extend([f"{indent}$$", *(f"{indent}{b}" for b in body if b), f"{indent}$$", ""])
    return "\n".join(out)


def rewrite(text: str) -> str:
    """The docstring ``text`` with its reST math and cross-reference roles as Markdown."""
    text = _math_blocks(text)
    text = _MATH_ROLE.sub(lambda m: f"${m.group(1)}$", text)
    return _XREF_ROLE.sub(
        lambda m: f"`{m.group(1).split('.')[-1] if '~' in m.group(0) else m.group(1)}`", text
    )


class RstRoles(Extension):
    """Rewrite every docstring once it is loaded (see the module docstring)."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
