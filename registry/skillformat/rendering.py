"""SKILL.md bodies as safe HTML (SPEC §7, §10): markdown-it-py renders, nh3 sanitises.

SKILL.md text is hostile input. markdown-it runs with raw HTML off, so `<script>` in a body is
shown as text; nh3 (ammonia) then keeps only the tags and attributes Markdown produces and only
http(s)/mailto links, so `javascript:` or `data:` URLs never reach the page, whatever the
renderer let through.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "i", "img", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},  # language-xyz from fenced code blocks
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
}


@lru_cache(maxsize=512)
def render_markdown(text: str) -> str:
    """Sanitised HTML for a Markdown text. Cached: versions are immutable, so the same body
    renders many times (the skill page, the preview while typing)."""
    html = _markdown.render(text)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )
