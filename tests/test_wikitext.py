"""Wikitext cleaning (extractor.sentences.wikitext): realistic snippets, real enwiki pages, edge cases."""
from __future__ import annotations

import bz2
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.lexicon.lexicon import load_lexicon
from extractor.sentences.wikitext import DROP_REASONS, clean_page, page_skip_reason, precut
from tests.conftest import shared_file

EN = load_lexicon("en")
RO = load_lexicon("ro")
ES = load_lexicon("es")

# What the issue calls markup residue, plus what a reader would call it too.
RESIDUE = re.compile(r"\[\[|\]\]|\{\{|\}\}|thumb\||Category:|\{\||\|\}|<ref|&nbsp;|&amp;|''|__[A-Z]+__|"
                     r"</?(?:div|span|ref|references|gallery|math|blockquote|center|small|br)\b")


def paragraphs(page):
    return [p for s in page.sections for p in s.paragraphs]


def read_dump(path):
    pages = []
    with bz2.open(path) as fh:
        for _, el in ET.iterparse(fh):
            if el.tag.rsplit("}", 1)[-1] == "page":
                revs = el.findall("{*}revision")
                pages.append({"id": el.findtext("{*}id"), "title": el.findtext("{*}title"),
                              "ns": el.findtext("{*}ns"), "redirect": el.find("{*}redirect") is not None,
                              "text": revs[-1].findtext("{*}text") or ""})
                el.clear()
    return pages


# --- realistic snippets --------------------------------------------------------------------

BIO = """{{Short description|American novelist}}
{{Infobox writer
| name = Jane Doe
| image = [[File:Jane Doe 2010.jpg|thumb|upright]]
| birth_date = {{birth date and age|1950|1|1}}
| spouse = {{marriage|John Roe|1975}}
}}
'''Jane Doe''' ({{IPA-en|dʒeɪn|lang}}; born {{birth date|1950|1|1}}) is an American [[novel]]ist from [[Chicago|Chicago, Illinois]]<ref name="nyt">{{cite news|url=http://x.example|title=Doe|work=NYT}}</ref> who wrote
''[[Eagle (novel)|Eagle]]'''s sequel.<ref name="nyt"/> She lived {{convert|5|km|mi}} from the [[Lake Michigan|lake]]s.<!-- check this -->
[[File:Doe house.jpg|thumb|left|Her house in [[Oak Park, Illinois|Oak Park]], 1990.]]
Her first book, ''{{lang|fr|La Voix}}'' (English: ''The Voice''), appeared at [http://example.com the publisher's site] and http://bare.example.com/x.&nbsp;It sold well.
__TOC__
{| class="wikitable"
|-
! Year !! Title
|-
| 1980 || ''Eagle''
|}
* [[List item]] that is dropped
# numbered item
: indented line
; term
== Career ==
She taught at [[:Category:Universities|several universities]] &mdash; for ten years.<br />Then she retired.

<gallery>
File:A.jpg|Caption with [[link]]
</gallery>
=== Later work ===
Her later novels sold fewer copies.<ref>Smith 2001, p. 4.</ref>

== References ==
{{Reflist}}
=== Notes ===
A note that must not survive.
== External links ==
* [http://janedoe.example Official site]
{{Authority control}}

[[Category:1950 births]]
[[Category:American novelists| ]]
[[de:Jane Doe]]
[[simple:Jane Doe]]
"""


def test_biography_snippet_sections_and_text():
    page = clean_page(BIO, EN)
    assert [(s.title, s.level) for s in page.sections] == [("", 1), ("Career", 2), ("Later work", 3)]
    lead = page.sections[0].paragraphs
    assert lead[0] == ("Jane Doe (born) is an American novelist from Chicago, Illinois who wrote "
                       "Eagle's sequel. She lived 5 km from the lakes.")
    assert lead[1] == ("Her first book, La Voix (English: The Voice), appeared at the publisher's site "
                       "and. It sold well.")   # the period after a free URL is not part of it
    assert page.sections[1].paragraphs == ["She taught at several universities — for ten years. Then she retired."]
    assert page.sections[2].paragraphs == ["Her later novels sold fewer copies."]
    text = " ".join(paragraphs(page))
    assert not RESIDUE.search(text)
    assert "note that must not survive" not in text and "Official site" not in text
    assert "1980" not in text and "List item" not in text and "Caption" not in text


def test_biography_snippet_drop_counts():
    drops = clean_page(BIO, EN).drops
    assert drops["dropped_section"] == 2          # References (with its Notes) and External links
    assert drops["table"] == 1
    assert drops["list_line"] == 4
    assert set(drops) <= set(DROP_REASONS)


def test_headings_start_sections_and_drop_subsections_only_below():
    text = "Lead text here.\n== See also ==\n* [[X]]\n=== Deeper ===\nHidden.\n== History ==\nVisible again.\n"
    page = clean_page(text, EN)
    assert [(s.title, s.paragraphs) for s in page.sections] == [
        ("", ["Lead text here."]), ("History", ["Visible again."])]


def test_blank_lines_lists_and_tables_end_paragraphs():
    text = "First line\ncontinues here.\n\nSecond paragraph.\n* item\nThird paragraph.\n{|\n| x\n|}\nFourth."
    assert paragraphs(clean_page(text, EN)) == [
        "First line continues here.", "Second paragraph.", "Third paragraph.", "Fourth."]


def test_links():
    page = clean_page(
        "A [[Paris]] and [[Paris|the capital]] and [[dog]]s and [[Foo (band)|]] and [[#History|below]] "
        "and [[Wikipedia:Manual of Style|the manual]] and [[:es:Perro|perro]] and [[wikt:word|word]].", EN)
    assert paragraphs(page) == [
        "A Paris and the capital and dogs and Foo and below and the manual and perro and word."]


def test_file_links_with_nested_links_and_captions_are_removed():
    text = ("Before [[File:X.svg|thumb|A [[caption]] with [[Other|links]] and {{small|tpl}}]] after. "
            "[[Image:Y.png]] [[Media:Z.ogg|sound]] end.")
    assert paragraphs(clean_page(text, EN)) == ["Before after. end."]


def test_romanian_and_spanish_namespace_aliases():
    ro = "Text [[Fișier:A.jpg|miniatura|Un [[râu]]]] [[Fişier:B.jpg]] [[Imagine:C.jpg|x]] rămas.\n[[Categorie:Râuri]]\n[[en:River]]"
    assert paragraphs(clean_page(ro, RO)) == ["Text rămas."]
    es = "Texto [[Archivo:A.jpg|miniaturadeimagen|Un [[río]]]] [[Imagen:B.png]] restante.\n[[Categoría:Ríos]]\n[[ro:Râu]]"
    assert paragraphs(clean_page(es, ES)) == ["Texto restante."]


def test_drop_sections_match_any_spelling_of_the_lexicon_name():
    for heading in ("Referințe", "Referinţe", "Referinte", "REFERINȚE", "Legături externe", "Note:"):
        page = clean_page(f"Text de articol.\n== {heading} ==\nSursa 1.\n", RO)
        assert paragraphs(page) == ["Text de articol."], heading
    page = clean_page("Texto del artículo.\n== Véase también ==\nOtro.\n== Enlaces externos ==\nWeb.\n", ES)
    assert paragraphs(page) == ["Texto del artículo."]


def test_html_tags_entities_and_dropped_tags():
    text = ('E = <math>mc^2</math> holds.<ref group="n">Note.</ref> The <code>ls</code> command, '
            '<span style="color:red">red</span> &amp; <small>small</small> x<sup>2</sup> '
            '<syntaxhighlight lang="python">print(1)</syntaxhighlight>done&nbsp;now &amp;nbsp;ok.')
    assert paragraphs(clean_page(text, EN)) == ["E = holds. The ls command, red & small x2 done now ok."]


def test_unpaired_block_tags_are_removed():
    text = "Intro line.<blockquote>\n\nA quoted sentence stays.\n\n</blockquote>\n<div class=\"x\">\nInside div.\n</div>"
    assert paragraphs(clean_page(text, EN)) == ["Intro line.", "A quoted sentence stays.", "Inside div."]


def test_quotes_follow_mediawiki():
    cases = {
        "'''Bold''' and ''italic'' and '''''both'''''.": "Bold and italic and both.",
        "''Eagle'''s ascent stage.": "Eagle's ascent stage.",
        "l''''arte'''' word.": "l'arte' word.",
        "Rock 'n' roll's ''style''.": "Rock 'n' roll's style.",
    }
    for raw, want in cases.items():
        assert paragraphs(clean_page(raw, EN)) == [want], raw


def test_inline_text_templates_keep_their_text():
    text = ("The {{lang|de|Autobahn}} is {{convert|12|-|15|km}} long, {{nowrap|very long}}, "
            "built {{circa|1930}} for {{frac|1|2}} of the cost {{as of|2010|lc=y}}, {{sfn|Smith|2001}}done.")
    assert paragraphs(clean_page(text, EN)) == [
        "The Autobahn is 12 - 15 km long, very long, built c. 1930 for 1/2 of the cost as of 2010, done."]


def test_nested_and_broken_templates():
    text = "A {{outer|x={{inner|{{deep}}}}|y}} B {{{param|default}}} C {{#if:x|y|z}} D."
    assert paragraphs(clean_page(text, EN)) == ["A B C D."]
    # A {{ never closed: cut to the end of its paragraph (MediaWiki would print it raw).
    page = clean_page("Good start {{unclosed|template text\nmore\n\nNext paragraph survives {{ok}}.", EN)
    assert paragraphs(page) == ["Good start", "Next paragraph survives."]
    assert page.drops["unbalanced_template"] == 1
    page = clean_page("And }} stray closing.", EN)
    assert paragraphs(page) == ["And stray closing."] and page.drops["markup_residue"] == 1


def test_unclosed_comment_table_and_link():
    page = clean_page("Visible text.<!-- hidden\n\nstill hidden", EN)
    assert paragraphs(page) == ["Visible text."] and page.drops["unclosed_comment"] == 1
    page = clean_page("Before.\n{| class=x\n| cell\nNever closed.", EN)
    assert paragraphs(page) == ["Before."] and page.drops["unclosed_table"] == 1
    page = clean_page("Kept. [[File:X.jpg|thumb|never closed\nNext line kept.", EN)
    assert paragraphs(page) == ["Kept. Next line kept."] and page.drops["unclosed_link"] == 1


def test_nested_tables_and_table_inside_template():
    text = ("Para one.\n{|\n| a\n{|\n| nested\n|}\n| b\n|}\nPara two.\n"
            "{{Box|content=\n{|\n| in template\n|}\n}}\nPara three.")
    assert paragraphs(clean_page(text, EN)) == ["Para one.", "Para two.", "Para three."]


def test_magic_words_nowiki_and_empty_paragraphs():
    page = clean_page("__NOTOC__\n{{Infobox x|a=b}}\n\nText with <nowiki>plain</nowiki> and <nowiki>[[x]]</nowiki>.\n\n"
                      "[[File:A.jpg|thumb|only an image]]\n\n[http://example.com/]\n\n{{Navbox}}", EN)
    assert paragraphs(page) == ["Text with plain and."]
    # the unlabelled link leaves an empty paragraph; image- and template-only lines vanish in the pre-cut
    assert page.drops["empty_paragraph"] == 1


def test_empty_and_none_input():
    assert clean_page("", EN).sections == []
    assert clean_page(None, EN).sections == []


def test_precut_keeps_links_and_drops_bulk():
    out = precut("a<ref>{{cite|x}}</ref> [[Link|b]] {{tpl}} [[Category:C]]<!-- c -->", EN)
    assert out == "a [[Link|b]]  "


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["{{", "}}", "{{{", "}}}", "[[", "]]", "{|", "|}", "|", "a", "Word ",
                                 "\n", "\n\n", "File:", "<ref>", "</ref>", "<!--", "-->", "''", "==", "=",
                                 "*", "[http://x y]", "&nbsp;", "<span>", "</span>"]), max_size=40))
def test_never_raises_and_never_leaves_brackets(pieces):
    page = clean_page("".join(pieces), EN)
    for para in paragraphs(page):
        assert "{{" not in para and "}}" not in para and "[[" not in para and "]]" not in para
        assert para == para.strip() and "  " not in para
    assert all(k in DROP_REASONS for k in page.drops)


# --- page filters ------------------------------------------------------------------------

@pytest.mark.parametrize("lex,title,text,want", [
    (EN, "Mercury", "'''Mercury''' may refer to:\n* [[Mercury (planet)]]\n{{disambiguation}}", "disambiguation"),
    (EN, "Aa", "{{Disambiguation|geo}}", "disambiguation"),
    (EN, "X", "{{Set index article}}", "disambiguation"),
    (EN, "X", "__DISAMBIG__ text", "disambiguation"),
    (EN, "List of rivers", "Rivers.", "list_page"),
    (EN, "Listing", "A normal page about listings.", None),
    (EN, "Mercury (planet)", "{{Infobox planet}} '''Mercury''' is a planet. {{Disambig-class}}", None),
    (RO, "Mercur", "'''Mercur''' se poate referi la:\n{{Dezambiguizare}}", "disambiguation"),
    (RO, "Popescu", "{{Nume de familie}}", "disambiguation"),
    (RO, "Listă de râuri din România", "Text.", "list_page"),
    (RO, "Lista orașelor din România", "Text.", "list_page"),
    (RO, "Lista lui Schindler", "Film de Steven Spielberg.", None),
    (RO, "Brașov", "{{Altesensuri|Brașov (dezambiguizare)}} Text.", None),
    (ES, "Mercurio", "{{desambiguación}}", "disambiguation"),
    (ES, "Anexo:Ríos de España", "Texto.", "list_page"),
    (ES, "Lista de picos", "Texto.", "list_page"),
    (ES, "Toledo", "{{Otros usos|Toledo (desambiguación)}} Texto.", None),
])
def test_page_skip_reason(lex, title, text, want):
    assert page_skip_reason(title, text, lex) == want


# --- real pages --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def enwiki():
    pages = [p for p in read_dump(shared_file("dumps/enwiki-sample-206pages.xml.bz2"))
             if p["ns"] == "0" and not p["redirect"]]
    kept = {}
    skipped = {}
    for p in pages:
        reason = page_skip_reason(p["title"], p["text"], EN)
        if reason:
            skipped[p["title"]] = reason
        else:
            kept[p["title"]] = clean_page(p["text"], EN)
    return kept, skipped


def test_enwiki_no_markup_residue(enwiki):
    kept, _ = enwiki
    offending = [(t, m.group(), para[max(0, m.start() - 40):m.end() + 40])
                 for t, page in kept.items() for para in paragraphs(page) for m in [RESIDUE.search(para)] if m]
    assert offending == []


def test_enwiki_sections_and_filters(enwiki):
    kept, skipped = enwiki
    assert len(kept) == 96
    assert skipped == {
        "List of Atlas Shrugged characters": "list_page", "Alien": "disambiguation",
        "Austin (disambiguation)": "disambiguation", "Ada": "disambiguation",
        "Aberdeen (disambiguation)": "disambiguation", "Argument (disambiguation)": "disambiguation",
        "Animal (disambiguation)": "disambiguation", "Asia Minor (disambiguation)": "disambiguation",
        "Aa River": "disambiguation", "List of anthropologists": "list_page"}
    dropped = {s.casefold() for s in EN.drop_sections}
    assert not [s.title for page in kept.values() for s in page.sections if s.title.casefold() in dropped]
    anarchism = kept["Anarchism"]
    assert anarchism.sections[0].title == ""
    assert anarchism.sections[0].paragraphs[0].startswith(
        "Anarchism is a political philosophy that advocates self-governed societies based on voluntary institutions.")
    assert [s.title for s in anarchism.sections][1:3] == ["Etymology and terminology", "Origins"]
    assert sum(len(paragraphs(p)) for p in kept.values()) == 4839


def test_enwiki_tables_leave_no_table_text():
    table_bits = re.compile(r"\|-|\|\||!!|\{\||\|\}|colspan|rowspan|style=|class=|align=|width=|bgcolor")
    for page in read_dump(shared_file("dumps/enwiki-tables-5pages.xml.bz2")):
        cleaned = clean_page(page["text"], EN)
        assert cleaned.drops["table"] >= 1, page["title"]
        for para in paragraphs(cleaned):
            assert not table_bits.search(para), (page["title"], para[:200])
            assert not RESIDUE.search(para), (page["title"], para[:200])
        assert paragraphs(cleaned), page["title"]


def test_category_lines_of_unknown_namespace_names_are_dropped():
    # A Bulgarian page read with the English lexicon: the category name is not in en.yaml.
    text = "Текст на статията.\n\n[[Категория:Календари]]\n[[Категория:Време| ]] [[de:Kalender]]"
    assert paragraphs(clean_page(text, EN)) == ["Текст на статията."]
    # ... but a link inside prose keeps its text.
    assert paragraphs(clean_page("See [[Wikipedia:Manual|the manual]] here.", EN)) == ["See the manual here."]
    # wherever the line is: first on the page, indented by a space or a tab, after a
    # Windows line end, last on the page
    for page in ("[[Категория:Календари]]\nТекст на статията.", "Текст на статията.\n [[Категория:Календари]]",
                 "Текст на статията.\n\t[[Категория:Календари]] ", " [[Категория:Календари]]\nТекст на статията.",
                 "\t[[Категория:Време| ]]\r\nТекст на статията.", "Текст на статията.\r\n[[Категория:Време]]"):
        assert paragraphs(clean_page(page, EN)) == ["Текст на статията."], page
        assert "Категория" not in precut(page, EN), page


def test_many_unclosed_templates_do_not_recurse():
    text = "".join(f"Paragraph {i} {{{{open\n\n" for i in range(5000))
    page = clean_page(text, EN)
    assert len(paragraphs(page)) == 5000 and page.drops["unbalanced_template"] == 5000


def test_bgwiki_utf16_page_cleans_without_residue():
    path = shared_file("dumps/bgwiki-sample-utf16.xml.bz2")
    pages = [p for p in read_dump(path) if p["ns"] == "0"]
    assert len(pages) == 1
    page = clean_page(pages[0]["text"], EN)
    paras = paragraphs(page)
    assert paras[0].startswith("Григорианският календар (понякога наричан и Грегориански календар")
    assert not [p for p in paras if RESIDUE.search(p) or "Категория" in p]


def test_holes_left_by_pronunciation_templates_are_tidied():
    text = ("'''Albert Einstein''' ({{IPAc-en|ˈ|aɪ|n}};<ref>{{cite book|title=X}}</ref> {{IPA-de|ˈalbɛɐ̯t|lang}}; "
            "14 March 1879&nbsp;– 18 April 1955) was a physicist. '''Asphalt''' ({{IPAc-en|US|ˈ|æ}}, "
            "{{IPAc-en|UK|ˈ|æ}},<ref>x</ref> occasionally {{IPAc-en|ˈ|æ}}), also known as bitumen ({{IPAc-en|b}}).")
    assert paragraphs(clean_page(text, EN)) == [
        "Albert Einstein (14 March 1879 – 18 April 1955) was a physicist. "
        "Asphalt (occasionally), also known as bitumen."]


def test_file_link_captions_with_external_links_and_nested_links():
    text = ("A [[File:X.jpg|thumb|From [http://example.com the site]]] B "
            "[[File:Y.jpg|thumb|A [[nested|link]]]] C [[Image:Z.jpg|thumb|[[a]] and [[b|c]]]] D.")
    assert paragraphs(clean_page(text, EN)) == ["A B C D."]


def test_unclosed_and_broken_tags():
    assert paragraphs(clean_page("A <ref name=a> dangling text. B.", EN)) == ["A dangling text. B."]
    # as in MediaWiki, an unclosed ref runs to the next closing tag of its name
    assert paragraphs(clean_page("A <ref name=a> dangling. B<ref>x</ref> C.", EN)) == ["A C."]
    # "</ref name=...>" does not close a ref in MediaWiki (seen in the real Albert Einstein page)
    assert paragraphs(clean_page('A<ref>x</ref name"y"> still ref</ref> B.', EN)) == ["A B."]
    assert paragraphs(clean_page("A </math> B <gallery/> C <MATH>x</Math> D.", EN)) == ["A B C D."]
    many = clean_page("Word <ref name=a> more. " * 3000, EN)   # one linear pass, however broken
    assert paragraphs(many) == [" ".join(["Word more."] * 3000)]
    comments = clean_page("Text <!-- a --> and <!-- b" + " x <!-- y" * 3000, EN)
    assert paragraphs(comments) == ["Text and"] and comments.drops["unclosed_comment"] == 1


def test_transclusion_tags_and_tag_spacing():
    text = ("<onlyinclude>'''Agricultural science''' is a field.</onlyinclude> <noinclude>Shown here.</noinclude>"
            "<includeonly>Only when transcluded.</includeonly> H<sub>2</sub>O and θ<sub>i</sub>; "
            "he said:<blockquote>Quoted.</blockquote>")
    assert paragraphs(clean_page(text, EN)) == [
        "Agricultural science is a field. Shown here. H2O and θi; he said: Quoted."]
    many = clean_page("a <span> b " * 3000, EN)   # unpaired tags never reach the parser
    assert paragraphs(many) == [" ".join(["a b"] * 3000)]


def test_fast_path_equals_full_mwparserfromhell_parse(enwiki):
    """The regular-expression fast path for links must give what mwparserfromhell gives
    when it parses every paragraph (full_parse=True), on every real enwiki page."""
    pages = [p for p in read_dump(shared_file("dumps/enwiki-sample-206pages.xml.bz2"))
             if p["ns"] == "0" and not p["redirect"]]
    pages += read_dump(shared_file("dumps/enwiki-tables-5pages.xml.bz2"))
    differ = [(p["title"], a, b) for p in pages
              for a, b in zip(paragraphs(clean_page(p["text"], EN)), paragraphs(clean_page(p["text"], EN, full_parse=True)))
              if a != b]
    assert differ == []
    assert paragraphs(clean_page(BIO, EN)) == paragraphs(clean_page(BIO, EN, full_parse=True))


@pytest.mark.parametrize("full_parse", [False, True])
def test_entity_encoded_comments_leave_no_marker(full_parse):
    # A real rowiki page (Berlin) with comments written with entities, as some exports have
    # them (&lt;!-- ... --&gt; in the wikitext): decoded, they are comments, never text.
    path = shared_file("dumps/rowiki-real-3pages.xml")
    pages = [el for _, el in ET.iterparse(path) if el.tag.rsplit("}", 1)[-1] == "text"]
    wikitext = max((el.text or "" for el in pages), key=len)
    paras = [p for p in wikitext.split("\n\n") if len(p) > 300 and not p.lstrip().startswith(("{", "|", "[", "="))]
    assert len(paras) >= 3
    plain = clean_page(wikitext, RO, full_parse=full_parse)
    cut = paras[0].index(" ", 120)
    marked = wikitext.replace(paras[0], paras[0][:cut] + " &lt;!-- o notă ascunsă --&gt; " + paras[0][cut:], 1)
    marked = marked.replace(paras[1], paras[1] + " --&gt;", 1).replace(paras[2], "&lt;!-- " + paras[2], 1)
    page = clean_page(marked, RO, full_parse=full_parse)
    text = " ".join(paragraphs(page))
    assert "<!--" not in text and "-->" not in text and "notă ascunsă" not in text
    assert page.drops["encoded_comment"] == 3
    assert len(text.split()) == len(" ".join(paragraphs(plain)).split())  # nothing else lost
