"""Wikitext -> sections -> paragraphs of plain text (pure Python, no Spark).

Speed: mwparserfromhell is the slow part of cleaning, and most of a page's bytes are
templates, refs, tables and comments that are thrown away anyway (docs/cleaning.md "How it
is fast" has the figures). So `clean_page` first cuts those with linear string scanners (regular expressions
and brace/bracket counters), drops list lines, splits headings and paragraphs line by
line, rewrites quotes, plain links and HTML tags of each paragraph with regular
expressions, and only hands paragraphs whose link markup is still not plain (a tag inside a
link label, brackets that do not pair) to mwparserfromhell (`full_parse=True` hands it every
paragraph with links; a test checks both give the same text on real pages). The parse
result is rendered in one pass over the node list (never with `Wikicode.remove()`, which
searches the whole tree per call). Every step is linear in the page, also on broken pages.

What is kept and dropped is documented in docs/cleaning.md; the names of the counters in
`CleanedPage.drops` are part of the job's stats.json and must stay stable.
"""
from __future__ import annotations

import bisect
import html
import re
from collections import Counter
from dataclasses import dataclass, field

import mwparserfromhell
from mwparserfromhell.nodes import (Argument, Comment, ExternalLink, Heading, HTMLEntity, Tag,
                                    Template, Text, Wikilink)

__all__ = ["Section", "CleanedPage", "clean_page", "page_skip_reason", "DROP_REASONS"]

# Counter names used in CleanedPage.drops (stats.json keys; keep them short and stable).
DROP_REASONS = {
    "dropped_section": "a section named in the lexicon's drop_sections (and its subsections)",
    "empty_paragraph": "a paragraph with no words left after inline cleaning (e.g. an unlabelled link)",
    "list_line": "a bulleted, numbered, definition or indented line (lists rarely form sentence pairs)",
    "table": "a {| ... |} table",
    "unclosed_table": "a table without |}: cut to the end of the page",
    "unbalanced_template": "a {{ without }}: cut to the end of its paragraph",
    "unclosed_link": "a file/category link without ]]: cut to the end of its line",
    "unclosed_comment": "a <!-- without -->: cut to the end of the page",
    "encoded_comment": "a comment spelled with entities (&lt;!-- ... --&gt;) or a stray <!-- or -->: removed",
    "markup_residue": "stray markup tokens ({{ }} [[ ]] {| |}) removed from a paragraph",
    "parse_error": "mwparserfromhell failed on a paragraph: the paragraph is dropped",
}


@dataclass
class Section:
    title: str                      # '' for the lead section
    paragraphs: list[str] = field(default_factory=list)
    level: int = 1                  # heading level (== is 2); the lead is 1


@dataclass
class CleanedPage:
    sections: list[Section]
    drops: Counter

    @property
    def paragraphs(self) -> list[str]:
        return [p for s in self.sections for p in s.paragraphs]


# --- pre-cut: cheap removal before mwparserfromhell -------------------------------------

_NOWIKI_TOKEN_RE = re.compile(r"<(/?)nowiki\s*(/?)>", re.I)
# Tags dropped with their content. <code> and <nowiki> keep their text (inline prose);
# block code, math, galleries and embedded data do not form sentences.
_DROP_TAGS = ("ref", "references", "gallery", "math", "chem", "ce", "timeline", "imagemap",
              "syntaxhighlight", "source", "pre", "score", "graph", "mapframe", "maplink",
              "templatedata", "hiero", "inputbox", "categorytree", "poem", "includeonly",
              "table", "del", "s", "strike")
_DROP_TAG_SET = frozenset(_DROP_TAGS)
# <tag ...>, </tag>, <tag .../> of the dropped tags: (closing slash)(name)(attributes)(self-closing slash)
_DROP_TAG_TOKEN_RE = re.compile(r"<(/?)(%s)\b([^<>]*?)(/?)\s*>" % "|".join(_DROP_TAGS), re.I)
_BRACE_RUN_RE = re.compile(r"\{\{+|\}\}+")
_MAGIC_WORD_RE = re.compile(r"__[A-Z]+__")
_LINK_ONLY_LINE_RE = re.compile(r"^[ \t]*(?:\[\[[^\[\]|:\n]+:[^\[\]\n]*\]\][ \t]*)+$", re.M)
_HEADING_RE = re.compile(r"^(=+)(.+?)(=+)\s*$")
_LINK_OPEN_RE = re.compile(r"\[\[|\]{2,}")
_MARKUP_CHARS = re.compile(r"[\[<&'{}|_]")
_RESIDUE_RE = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|'{2,}|<ref[^>]*>|</ref>|\bthumb\||__[A-Z]+__")
_SPACE_RE = re.compile(r"\s+")
_ENTITY_RE = re.compile(r"&(?:[a-zA-Z]{2,8}|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
_ALNUM_RE = re.compile(r"[^\W_]")
_QUOTE_SPLIT_RE = re.compile(r"('{2,})")
# [[target]] / [[target|label]] without nested brackets, templates or tags in them.
_SIMPLE_LINK_RE = re.compile(r"\[\[([^\[\]|{}<>\n]+)(?:\|([^\[\]{}<>\n]*))?\]\]")
_PIPE_TRICK_RE = re.compile(r"\s*\([^)]*\)\s*$")
_EXT_LINK_RE = re.compile(r"\[(?:https?:|ftp:|mailto:|//)[^\s\[\]<>]*(?:\s+([^\[\]\n]*))?\]", re.I)
_BARE_URL_RE = re.compile(r"\b(?:https?|ftp)://[^\s<>\[\]]+", re.I)
# HTML tags are stripped by name, keeping their text (also when unpaired: a <blockquote>
# opened in one paragraph and closed in another, a <div> around a table).
# Block tags separate words (a space); inline ones do not (x<sup>2</sup> -> x2, θ<sub>i</sub> -> θi).
_BLOCK_TAGS = ("div", "center", "blockquote", "br", "p", "ol", "ul", "li", "dl", "dt", "dd", "table", "tr",
               "td", "th", "caption", "hr", "section", "h[1-6]", "references", "gallery", "ref", "wbr")
_INLINE_TAGS = ("span", "small", "big", "font", "sup", "sub", "b", "i", "u", "em", "strong", "abbr", "code",
                "tt", "cite", "q", "var", "kbd", "samp", "mark", "ins", "bdi", "bdo", "rp", "rt", "ruby",
                "time", "data", "onlyinclude", "noinclude", "includeonly", "nowiki")
_BLOCK_TAG_SET = frozenset(t for t in _BLOCK_TAGS if "[" not in t) | {f"h{i}" for i in range(1, 7)}
_BLOCK_TAG_RE = re.compile(r"</?(?:%s)\b[^<>]*>" % "|".join(_BLOCK_TAGS), re.I)
_INLINE_TAG_RE = re.compile(r"</?(?:%s)\b[^<>]*>" % "|".join(_INLINE_TAGS), re.I)
_SPACE_BEFORE_PUNCT_RE = re.compile(r" ([,.;:!?)\]])")
_EMPTY_PARENS_RE = re.compile(r"\(\s*[,;:]?\s*\)|\[\s*\]")
_PAREN_LEADING_PUNCT_RE = re.compile(r"\(\s*(?:[,;:]\s*)+")
_PAREN_TRAILING_PUNCT_RE = re.compile(r"(?:\s*[,;:])+\s*\)")
_DOUBLE_PUNCT_RE = re.compile(r"([,;])\s*(?=[,;.])")
_ENCODED_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_INTERLANG_RE = r"[a-z]{2,3}(?:-[a-z]+)*|simple"


def _cut_comments(text: str, drops: Counter) -> str:
    """Remove <!-- comments --> in one left-to-right pass (linear even when broken)."""
    pos = text.find("<!--")
    if pos < 0:
        return text
    out: list[str] = []
    last = 0
    while pos >= 0:
        end = text.find("-->", pos + 4)
        out.append(text[last:pos])
        if end < 0:  # MediaWiki hides everything after an unclosed comment
            drops["unclosed_comment"] += 1
            return "".join(out)
        last = end + 3
        pos = text.find("<!--", last)
    out.append(text[last:])
    return "".join(out)


def _cut_encoded_comments(text: str, drops: Counter) -> str:
    """Remove the comments that entities spelled (&lt;!-- ... --&gt;, decoded by `_finish`)
    and any stray opener or closer: an unclosed one hides nothing here (MediaWiki shows it
    as text), it is only a marker."""
    drops["encoded_comment"] += 1
    return _ENCODED_COMMENT_RE.sub(" ", text).replace("<!--", " ").replace("-->", " ")


def _cut_nowiki(text: str) -> str:
    """<nowiki>text</nowiki> -> text, unless it holds markup characters (literal markup would
    look like residue downstream): then nothing. <nowiki/> and unpaired tags vanish. Linear."""
    out: list[str] = []
    last = 0
    opened = -1          # end of the pending <nowiki> tag
    for m in _NOWIKI_TOKEN_RE.finditer(text):
        if m.group(2):   # <nowiki/>
            if opened < 0:
                out.append(text[last:m.start()])
                last = m.end()
            continue
        if not m.group(1):   # <nowiki>
            if opened < 0:
                out.append(text[last:m.start()])
                opened = last = m.end()
            continue
        if opened >= 0:      # </nowiki> closing the pending one
            inner = text[opened:m.start()]
            if not _MARKUP_CHARS.search(inner.replace("'", "").replace("_", "")):
                out.append(inner)
            opened = -1
        else:
            out.append(text[last:m.start()])
        last = m.end()
    rest = text[last:]
    if opened >= 0:  # a <nowiki> never closed: its tag is gone, and so are later ones
        rest = _NOWIKI_TOKEN_RE.sub("", rest)
    out.append(rest)
    return "".join(out)


def _cut_tags(text: str, drops: Counter) -> str:
    """Remove the dropped tags (refs, math, galleries, ...) with their content.

    One pass over the tag tokens: an opening tag is cut together with everything up to the
    next closing tag of the same name; a self-closing one alone; an opening tag that is
    never closed loses only the tag itself (its text stays, as MediaWiki shows it). Linear
    in the page, so a broken page with thousands of unclosed <ref> cannot stall a task."""
    if "<" not in text:
        return text
    if "<nowiki" in text or "<NOWIKI" in text:
        text = _cut_nowiki(text)
    tokens = list(_DROP_TAG_TOKEN_RE.finditer(text))
    if not tokens:
        return text
    closing: dict[str, list[int]] = {}   # tag name -> indexes (into tokens) of its closing tags
    for i, m in enumerate(tokens):
        if m.group(1) and not m.group(3).strip():  # "</ref name=x>" closes nothing in MediaWiki
            closing.setdefault(m.group(2).lower(), []).append(i)
    out: list[str] = []
    last = 0
    for i, m in enumerate(tokens):
        if m.start() < last:
            continue  # inside a region already cut
        out.append(text[last:m.start()])
        last = m.end()
        if m.group(1) or m.group(4):
            continue  # a closing tag without its opening, or a self-closing tag: the tag goes
        ends = closing.get(m.group(2).lower())
        if ends:
            k = bisect.bisect_right(ends, i)
            if k < len(ends):
                last = tokens[ends[k]].end()
    out.append(text[last:])
    return "".join(out)


def _cut_templates(text: str, drops: Counter) -> str:
    """Remove every {{template}}, {{#parser function:}} and {{{parameter}}}, nested or not.

    Runs of braces are matched like MediaWiki does it closely enough: an opening run of n
    braces is closed by closing runs until its count is used up. A {{ that is never closed
    is cut to the end of its paragraph (MediaWiki would print it; we must not leave markup)
    and counted; scanning then resumes after it."""
    if "{{" not in text:
        if "}}" in text:
            drops["markup_residue"] += 1
            text = text.replace("}}", "")
        return text
    out: list[str] = []
    last = 0          # end of the text already copied or cut
    start = 0         # start of the outermost open template
    stack: list[int] = []
    pos = 0
    n = len(text)
    while True:
        m = _BRACE_RUN_RE.search(text, pos)
        if m is None:
            if not stack:
                break
            # Unclosed: cut to the end of the paragraph, then go on scanning after it.
            drops["unbalanced_template"] += 1
            out.append(text[last:start])
            end = text.find("\n\n", start)
            if end < 0:
                return "".join(out)
            stack.clear()
            last = pos = end
            continue
        run = m.end() - m.start()
        if text[m.start()] == "{":
            if not stack:
                start = m.start()
            stack.append(run)
            pos = m.end()
            continue
        if not stack:  # a stray }} outside any template
            drops["markup_residue"] += 1
            out.append(text[last:m.start()])
            last = pos = m.end()
            continue
        while run >= 2 and stack:
            top = stack.pop()
            used = min(top, run)
            run -= used
            if top - used >= 2:
                stack.append(top - used)
        pos = m.end()
        if not stack:
            out.append(text[last:start])
            if text[start + 2] != "{":  # {{{parameter}}} never has text
                kept = _template_text(text[start + 2:m.end() - run - 2], drops)
                if kept:
                    out.append(kept)
            last = pos
    out.append(text[last:n])
    return "".join(out)


_SPLIT_RE = re.compile(r"\[\[|\]\]|\{\{|\}\}|\|")


def _split_args(inner: str) -> list[str]:
    """Split a template body at its top-level pipes (not those of nested links/templates)."""
    parts: list[str] = []
    depth = 0
    last = 0
    for m in _SPLIT_RE.finditer(inner):
        tok = m.group()
        if tok == "|":
            if depth == 0:
                parts.append(inner[last:m.start()])
                last = m.end()
        elif tok in ("[[", "{{"):
            depth += 1
        elif depth:
            depth -= 1
    parts.append(inner[last:])
    return parts


def _positional(parts: list[str]) -> list[str]:
    return [p.strip() for p in parts[1:] if "=" not in p.split("[[", 1)[0].split("{{", 1)[0]]


def _first(pos):
    return pos[0] if pos else ""


_UNITS = {"km2": "km²", "m2": "m²", "mi2": "sq mi", "ha": "ha", "km3": "km³", "m3": "m³", "C": "°C", "F": "°F"}


def _convert(pos):
    if len(pos) >= 4 and pos[1] in ("-", "to", "and", "or", "–", "by", "x", "×"):
        return " ".join(pos[:3] + [_UNITS.get(pos[3], pos[3])])
    if len(pos) >= 2:
        return f"{pos[0]} {_UNITS.get(pos[1], pos[1])}"
    return _first(pos)


def _frac(pos):
    if len(pos) == 3:
        return f"{pos[0]} {pos[1]}/{pos[2]}"
    if len(pos) == 2:
        return f"{pos[0]}/{pos[1]}"
    return f"1/{pos[0]}" if pos else ""


# Inline templates whose text is part of the sentence (removing them would leave holes such
# as "called '' (English: ...)"). Everything else is removed with its arguments.
_TEXT_TEMPLATES = {
    **dict.fromkeys(("lang", "langx", "script", "transl", "transliteration"),
                    lambda pos: pos[-1] if len(pos) >= 2 else _first(pos)),
    **dict.fromkeys(("nowrap", "nobr", "nobreak", "sic", "small", "smaller", "larger", "big", "em",
                     "strong", "var", "code", "mono", "tt", "linktext", "visible anchor", "vanchor",
                     "not a typo", "proper name", "keep together", "abbr", "ill", "interlanguage link",
                     "interlanguage link multi", "nihongo", "val", "serif", "sans-serif", "lang-rtl",
                     "small caps", "smallcaps", "sc", "noitalic", "nowrap begin"), _first),
    **dict.fromkeys(("convert", "cvt"), _convert),
    **dict.fromkeys(("frac", "sfrac", "fraction"), _frac),
    **dict.fromkeys(("circa", "c.", "ca."), lambda pos: "c. " + pos[0] if pos else ""),
    "angbr": lambda pos: "⟨" + pos[0] + "⟩" if pos else "",
    **dict.fromkeys(("ndash", "en dash"), lambda pos: "–"),
    **dict.fromkeys(("mdash", "em dash"), lambda pos: "—"),
    **dict.fromkeys(("snd", "spaced ndash", "spaced en dash", "spnd", "sndash"), lambda pos: " – "),
    **dict.fromkeys(("nbsp", "thinsp", "sp"), lambda pos: " "),
    "'": lambda pos: "'",
    "'s": lambda pos: "'s",
}
_TEMPLATE_NAME_RE = re.compile(r"\s*([^|{}\[\]<>\n]*?)\s*(?:\||$)")


def _template_text(inner: str, drops: Counter) -> str:
    """The visible text of a removed template: '' except for the inline text templates."""
    m = _TEMPLATE_NAME_RE.match(inner)
    if m is None:
        return ""
    name = m.group(1).replace("_", " ").casefold()
    if name.startswith("formatnum:"):
        return inner.split(":", 1)[1].split("|", 1)[0].strip()
    func = _TEXT_TEMPLATES.get(name)
    if func is None:
        if name.startswith("lang-"):
            func = _first
        elif name == "as of":
            parts = _split_args(inner)
            year = _first(_positional(parts))
            lower = any(p.replace(" ", "").lower() in ("lc=y", "lc=yes") for p in parts[1:])
            return (("as of " if lower else "As of ") + year) if year else ""
        else:
            return ""
    try:
        text = func(_positional(_split_args(inner)))
    except IndexError:
        return ""
    if "{{" in text:
        text = _cut_templates(text, drops)
    return text


def _cut_links(text: str, start_re: re.Pattern, drops: Counter) -> str:
    """Remove [[File:...]] / [[Category:...]] / [[xx:...]] links with nested [[links]] in
    their captions. A link never closed is cut to the end of its line."""
    out: list[str] = []
    last = 0
    while True:
        m = start_re.search(text, last)
        if m is None:
            break
        out.append(text[last:m.start()])
        depth = 1
        pos = m.end()
        end = -1
        # A link never spans a blank line: bounding the search keeps broken pages linear.
        limit = text.find("\n\n", pos)
        if limit < 0:
            limit = len(text)
        while True:
            t = _LINK_OPEN_RE.search(text, pos, limit)
            if t is None:
                break
            if text[t.start()] == "[":
                depth += 1
            else:
                # A run of n closing brackets closes n // 2 links; an odd one out belongs
                # to a [http://x label] inside the caption: "[[File:x|a [http://y b]]]".
                depth -= (t.end() - t.start()) // 2
            pos = t.end()
            if depth <= 0:
                end = pos
                break
        if end < 0:
            drops["unclosed_link"] += 1
            nl = text.find("\n", m.end())
            end = len(text) if nl < 0 else nl
        last = end
    out.append(text[last:])
    return "".join(out)


# --- per-lexicon compiled rules ----------------------------------------------------------

# Namespace keys whose links are hidden in the rendered page: Media (-2), File (6), Category (14).
HIDDEN_NAMESPACE_KEYS = (-2, 6, 14)


class _Rules:
    def __init__(self, lexicon, namespaces: dict | None = None):
        """`namespaces`: key -> names from the dump's <siteinfo> (readers.site_namespaces);
        the lexicon's file/category names add to them."""
        self.lexicon = lexicon
        self._section_keys: dict[str, str] = {}
        site = namespaces or {}
        files = {"File", "Image", "Media", *lexicon.file_namespaces, *site.get(6, ()), *site.get(-2, ())}
        cats = {"Category", *lexicon.category_namespaces, *site.get(14, ())}
        self.hidden_ns = {self._key(x) for x in files | cats}
        alias = "|".join(sorted((re.escape(x).replace(r"\ ", "[ _]+") for x in files | cats), key=len, reverse=True))
        # File/category/interlanguage links start a hidden link; a leading ':' makes a
        # visible link ([[:Category:X|x]]), which is kept as text.
        self.hidden_link_re = re.compile(
            r"\[\[[ _]*(?:(?:%s)[ _]*:|(?:%s):)" % (alias, _INTERLANG_RE), re.I)
        self.interlang_re = re.compile(r"^(?:%s)$" % _INTERLANG_RE)
        self.drop_sections = {self._section_key(s) for s in lexicon.drop_sections}
        names = "|".join(re.escape(x).replace(r"\ ", "[ _]+") for x in lexicon.disambiguation_templates)
        self.disambig_re = (re.compile(r"\{\{\s*(?:template\s*:\s*)?(?:%s)\s*(?:\||\}\})" % names, re.I)
                            if names else None)
        self.list_res = [re.compile(p) for p in lexicon.list_page_title_patterns]

    @staticmethod
    def _key(ns: str) -> str:
        return _SPACE_RE.sub(" ", ns.replace("_", " ")).strip().casefold()

    def _section_key(self, title: str) -> str:
        # headings repeat all over a dump ("Note", "Istorie"): each is normalised once
        key = self._section_keys.get(title)
        if key is None:
            if len(self._section_keys) >= 100_000:
                self._section_keys.clear()
            key = self._section_keys[title] = self.lexicon.normalize(
                _SPACE_RE.sub(" ", title).strip().rstrip(":").strip())
        return key

    def is_dropped_section(self, title: str) -> bool:
        return self._section_key(title) in self.drop_sections

    def is_hidden_link(self, title: str) -> bool:
        if ":" not in title:
            return False
        prefix = title.split(":", 1)[0]
        key = self._key(prefix)
        return key in self.hidden_ns or bool(self.interlang_re.match(prefix.strip()))


_RULES: dict[tuple, _Rules] = {}


def _rules(lexicon, namespaces: dict | None = None) -> _Rules:
    ns_key = tuple(sorted((k, tuple(v)) for k, v in namespaces.items() if k in HIDDEN_NAMESPACE_KEYS)) \
        if namespaces else ()
    key = (str(lexicon.path), lexicon.sha256, ns_key)
    rules = _RULES.get(key)
    if rules is None:
        if len(_RULES) > 64:
            _RULES.clear()
        rules = _RULES[key] = _Rules(lexicon, dict(ns_key))
    return rules


# --- page filters ------------------------------------------------------------------------

_DISAMBIG_MAGIC = "__DISAMBIG__"


def page_skip_reason(title: str, wikitext: str, lexicon) -> str | None:
    """'list_page' or 'disambiguation' when the page is dropped whole, else None.

    Namespaces and redirects are the reader's business (they come from <ns>/<redirect>)."""
    rules = _rules(lexicon)
    for pattern in rules.list_res:
        if pattern.search(title or ""):
            return "list_page"
    if wikitext:
        if _DISAMBIG_MAGIC in wikitext:
            return "disambiguation"
        if rules.disambig_re is not None and "{{" in wikitext and rules.disambig_re.search(wikitext):
            return "disambiguation"
    return None


# --- rendering (one pass over the node list) ---------------------------------------------

_KEEP_EMPTY_TAGS = frozenset({"br", "hr", "wbr"})


def _render(nodes, out: list[str], rules: _Rules) -> None:
    for node in nodes:
        kind = type(node)
        if kind is Text:
            out.append(node.value)
        elif kind is Wikilink:
            title = str(node.title).strip()
            visible = title.startswith(":")
            if visible:
                title = title[1:].strip()
            elif rules.is_hidden_link(title):
                continue
            if node.text is not None:
                before = len(out)
                _render(node.text.nodes, out, rules)
                if len(out) == before or not "".join(out[before:]).strip():
                    out.append(_PIPE_TRICK_RE.sub("", _link_title_text(title, True)))
            else:
                out.append(_link_title_text(title, visible))
        elif kind is ExternalLink:
            if node.title is not None and node.brackets:
                _render(node.title.nodes, out, rules)
            # bare URLs and [http://x] without a label are not prose: dropped
        elif kind is Tag:
            tag = str(node.tag).strip().lower()
            if tag in _DROP_TAG_SET:
                continue
            if tag in _KEEP_EMPTY_TAGS:
                out.append(" ")
                continue
            if node.wiki_markup and tag in ("li", "dt", "dd"):
                continue  # a stray list marker inside a line
            if node.contents is not None:
                block = tag in _BLOCK_TAG_SET
                if block:
                    out.append(" ")
                _render(node.contents.nodes, out, rules)
                if block:
                    out.append(" ")
        elif kind is HTMLEntity:
            try:
                out.append(node.normalize())
            except (ValueError, OverflowError):
                pass
        elif kind in (Template, Argument, Comment, Heading):
            continue
        else:  # unknown node types: keep their text representation stripped of markup
            out.append(str(node))


def _finish(text: str, drops: Counter) -> str:
    """Whitespace and punctuation tidy-up after markup removal; stray markup is removed."""
    if "&" in text:  # entities, also those escaped twice in the source (&amp;nbsp;)
        text = html.unescape(text)
        if "&" in text and _ENTITY_RE.search(text):
            text = html.unescape(text)
    if "<!--" in text or "-->" in text:  # a comment written with entities (decoded above or by the parser)
        text = _cut_encoded_comments(text, drops)
    if "<" in text:
        text = _INLINE_TAG_RE.sub("", _BLOCK_TAG_RE.sub(" ", text))
    # (the `in` tests are C string searches, far cheaper than the alternation regex on the
    # many paragraphs without residue; a search for one character is faster than for two
    # in a text that is not ASCII, so each two-character test waits for its first's.)
    if ("{" in text or "}" in text or "[" in text or "]" in text or "|" in text or "<" in text
            or ("'" in text and "''" in text) or ("_" in text and "__" in text)) and _RESIDUE_RE.search(text):
        drops["markup_residue"] += 1
        text = _RESIDUE_RE.sub(" ", text)
    text = " ".join(text.split())
    if not text:
        return text
    # Holes left by removed templates: "X ( ; born 1950)" -> "X (born 1950)", "()" -> "".
    if (("(" in text and ("( " in text or "()" in text or "(;" in text or "(," in text))
            or (")" in text and (" )" in text or ";)" in text or ",)" in text))):
        text = _EMPTY_PARENS_RE.sub("", text)
        text = _PAREN_LEADING_PUNCT_RE.sub("(", text)
        text = _PAREN_TRAILING_PUNCT_RE.sub(")", text)
        text = _EMPTY_PARENS_RE.sub("", text)
        text = " ".join(text.split())
    if _SPACE_BEFORE_PUNCT_RE.search(text):
        text = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", text)
    if (("," in text and (",," in text or ",." in text or ",;" in text))
            or (";" in text and (";." in text or ";," in text))):
        text = _DOUBLE_PUNCT_RE.sub("", text)
    # Nothing but punctuation left (e.g. a caption remnant): not a paragraph.
    if not _ALNUM_RE.search(text):
        return ""
    return text


def _strip_quotes(line: str) -> str:
    """Remove ''italic'' and '''bold''' markup from one line the way MediaWiki's doQuotes
    reads it (runs of 4 and of more than 5 apostrophes, and an unpaired ''' that is really
    an apostrophe plus italics, as in ''Eagle'''s), keeping only literal apostrophes."""
    arr = _QUOTE_SPLIT_RE.split(line)
    if len(arr) == 1:
        return line
    italics = bold = 0
    for i in range(1, len(arr), 2):
        n = len(arr[i])
        if n == 4:
            arr[i - 1] += "'"
            arr[i] = "'''"
        elif n > 5:
            arr[i - 1] += "'" * (n - 5)
            arr[i] = "'''''"
        n = len(arr[i])
        if n == 2:
            italics += 1
        elif n == 3:
            bold += 1
        else:
            italics += 1
            bold += 1
    if italics % 2 and bold % 2:
        single = multi = space = -1
        for i in range(1, len(arr), 2):
            if len(arr[i]) != 3:
                continue
            before = arr[i - 1]
            x1 = before[-1:]     # as in MediaWiki, an empty prefix counts as a letter
            x2 = before[-2:-1]
            if x1 == " ":
                if space < 0:
                    space = i
            elif x2 == " ":
                single = i
                break
            elif multi < 0:
                multi = i
        pick = single if single >= 0 else multi if multi >= 0 else space
        if pick >= 0:
            arr[pick - 1] += "'"
    return "".join(arr[0::2])


def _link_title_text(title: str, pipe_trick_or_visible_ns: bool) -> str:
    """The text shown for a link without a label: the target, without a '#section' part
    ([[#History]] shows 'History'); [[:Category:X]] shows 'X'; the pipe trick [[Foo (bar)|]]
    shows 'Foo'."""
    title = title.strip().lstrip(":").strip()
    if pipe_trick_or_visible_ns and ":" in title:
        title = title.split(":", 1)[-1]
    if "#" in title:
        head, _, tail = title.partition("#")
        title = head or tail
    return title


def _simple_link(m: re.Match) -> str:
    title, label = m.group(1), m.group(2)
    if label is None:
        return _link_title_text(title, title.strip().startswith(":"))
    if not label.strip():  # pipe trick [[Foo (bar)|]] shows "Foo"
        return _PIPE_TRICK_RE.sub("", _link_title_text(title, True))
    return label


def _clean_inline(raw: str, rules: _Rules, drops: Counter, full_parse: bool = False) -> str:
    """One paragraph (or heading) of pre-cut wikitext -> plain text.

    Quotes, plain [[links]] and [http://x labelled links] are rewritten with regular
    expressions; only paragraphs that still hold markup after that (nested links, HTML
    tags, odd brackets) are parsed with mwparserfromhell."""
    if not _MARKUP_CHARS.search(raw):
        return _finish(raw, drops)
    text = raw
    # (two-character tests wait for their first character's, as in `_finish`)
    if "'" in text and "''" in text:
        text = "\n".join(_strip_quotes(line) for line in text.split("\n"))
    if "[" in text and not full_parse:
        if "[[" in text:
            text = _SIMPLE_LINK_RE.sub(_simple_link, text)
        if "[" in text and ("//" in text or "mailto:" in text):
            text = _EXT_LINK_RE.sub(lambda m: m.group(1) or "", text)
    if "/" in text and "//" in text:
        if "&nbsp;" in text:  # a non-breaking space ends a URL (as any space does)
            text = text.replace("&nbsp;", " ")
        if not full_parse:
            # as MediaWiki, trailing punctuation after a free URL is not part of it
            text = _BARE_URL_RE.sub(lambda m: m.group()[len(m.group().rstrip(".,;:!?)")):], text)
    if (("[" in text and "[[" in text) or ("]" in text and "]]" in text)
            or (full_parse and ("[" in text or "//" in text))):
        try:
            nodes = mwparserfromhell.parse(text, skip_style_tags=True).nodes
        except Exception:  # mwparserfromhell is robust; keep the job alive if it is not
            drops["parse_error"] += 1
            return ""
        out: list[str] = []
        _render(nodes, out, rules)
        text = "".join(out)
    return _finish(text, drops)


# --- the page ----------------------------------------------------------------------------

def precut(wikitext: str, lexicon, drops: Counter | None = None, namespaces: dict | None = None) -> str:
    """The cheap removals (comments, dropped tags, templates, file/category links), exposed
    for benchmarks and tests."""
    drops = Counter() if drops is None else drops
    rules = _rules(lexicon, namespaces)
    text = wikitext.replace("\r\n", "\n").replace("\r", "\n")
    text = _cut_comments(text, drops)
    text = _cut_tags(text, drops)
    text = _cut_templates(text, drops)
    if "[[" in text:
        text = _cut_links(text, rules.hidden_link_re, drops)
    if ":" in text and "[[" in text and (text.startswith(("[[", " ", "\t")) or "\n[[" in text or "\n " in text
                                         or "\n\t" in text):
        # Lines made only of [[Prefix:Target]] links are category/interlanguage blocks, also
        # in a wiki whose namespace names the lexicon does not list (a bgwiki dump read
        # with en.yaml: [[Категория:Календари]]). Only a line that starts with "[[" or with
        # a space or tab can be one: without such a line the regular expression, which
        # tries every position of the page for a line start, is not run (real pages
        # rarely have such a line once the other links are cut).
        text = _LINK_ONLY_LINE_RE.sub("", text)
    if "__" in text:
        text = _MAGIC_WORD_RE.sub("", text)
    return text


def clean_page(wikitext: str, lexicon, *, full_parse: bool = False, namespaces: dict | None = None) -> CleanedPage:
    """Split a page into sections of plain-text paragraphs.

    Headings start sections (the lead has title ''); sections named in the lexicon's
    drop_sections are dropped with their subsections; tables and list/indent lines are
    dropped; a blank line, a removed table or a removed list ends a paragraph.

    full_parse=True hands every paragraph with links to mwparserfromhell instead of the
    regular-expression fast path (slower; the tests use it to check the fast path).

    namespaces: the dump's namespace names (key -> names, from <siteinfo>), so that file
    and category links of any language are removed even when the lexicon lists none."""
    drops: Counter = Counter()
    rules = _rules(lexicon, namespaces)
    text = precut(wikitext or "", lexicon, drops, namespaces)

    sections: list[Section] = []
    current = Section("", [], 1)
    para: list[str] = []
    drop_level = 0       # >0 while inside a dropped section of that level
    table_depth = 0

    def flush() -> None:
        if para:
            cleaned = _clean_inline("\n".join(para), rules, drops, full_parse)
            if cleaned:
                current.paragraphs.append(cleaned)
            else:
                drops["empty_paragraph"] += 1
            para.clear()

    for line in text.split("\n"):
        if table_depth:
            s = line.lstrip(" :")
            if s.startswith("{|"):
                table_depth += 1
            elif s.startswith("|}"):
                table_depth -= 1
            continue
        stripped = line.strip()
        if not stripped:
            if para:
                flush()
            continue
        first = stripped[0]
        if first == "=":
            m = _HEADING_RE.match(stripped)
            if m:
                flush()
                if current.paragraphs:
                    sections.append(current)
                level = min(len(m.group(1)), len(m.group(3)), 6)
                raw_title = m.group(2).strip()
                title = (_clean_inline(raw_title, rules, Counter())
                         if _MARKUP_CHARS.search(raw_title) else raw_title)
                if drop_level and level > drop_level:
                    current = Section(title, [], level)  # a subsection of a dropped one
                    continue
                drop_level = 0
                if rules.is_dropped_section(title):
                    drops["dropped_section"] += 1
                    drop_level = level
                current = Section(title, [], level)
                continue
        if drop_level:
            continue
        if (first == "{" and stripped.startswith("{|")
                or (first == ":" and stripped.lstrip(":").lstrip().startswith("{|"))):
            flush()
            drops["table"] += 1
            table_depth = 1
            continue
        if first in "*#:;":
            flush()
            drops["list_line"] += 1
            continue
        if stripped.startswith("----"):
            flush()
            continue
        para.append(line)
    if table_depth:
        drops["unclosed_table"] += 1
    if not drop_level:
        flush()
    else:
        para.clear()
    if current.paragraphs:
        sections.append(current)
    return CleanedPage(sections, drops)
