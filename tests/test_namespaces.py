"""Namespaces from the dump itself (issue 17 item 2): file, category and media names are
taken from `<siteinfo><namespaces>`, so a dump is cleaned correctly with a lexicon that
lists none of its names; the lexicon's names add to them."""
from __future__ import annotations

import json

import pyarrow.dataset as ds
import pytest

from extractor.sentences.readers import read_head, site_namespaces
from extractor.sentences.wikitext import clean_page
from extractor.lexicon.lexicon import load_lexicon
from tests.conftest import shared_file

UK_HEAD = """<mediawiki><siteinfo><namespaces>
      <namespace key="-2" case="first-letter">Медіа</namespace>
      <namespace key="0" case="first-letter" />
      <namespace key="6" case="first-letter">Файл</namespace>
      <namespace key="14" case="first-letter">Категорія</namespace>
      <namespace key="100" case="first-letter">Портал &amp; Co</namespace>
    </namespaces></siteinfo>"""
UK_TEXT = ("[[Файл:Kyiv.jpg|міні|праворуч|Вид на [[Київ]]]] Київ є столицею України і найбільшим містом країни. "
           "Місто лежить на Дніпрі.[[Категорія:Столиці]] [[Медіа:Гімн.ogg]]\n")
TOKENS = {"uk": ("Файл:", "Категорія:", "Медіа:"), "vi": ("Tập tin:", "Thể loại:", "Phương tiện:")}


def test_site_namespaces_reads_names_and_adds_the_canonical_ones():
    ns = site_namespaces(UK_HEAD)
    assert ns[6] == ("Файл", "File", "Image") and ns[14] == ("Категорія", "Category")
    assert ns[-2] == ("Медіа", "Media") and ns[0] == () and ns[100] == ("Портал & Co",)
    assert site_namespaces("<mediawiki><siteinfo><sitename>W</sitename></siteinfo>") == {}


def test_dump_namespaces_clean_links_that_the_lexicon_does_not_know():
    en = load_lexicon("en")  # lists File/Image/Media/Category only
    without = " ".join(clean_page(UK_TEXT, en).paragraphs)
    with_ns = " ".join(clean_page(UK_TEXT, en, namespaces=site_namespaces(UK_HEAD)).paragraphs)
    assert "Файл:" in without or "міні" in without  # the link was kept as text
    assert with_ns == "Київ є столицею України і найбільшим містом країни. Місто лежить на Дніпрі."
    # the lexicon's own names still count (they add to the dump's)
    assert "Category" not in " ".join(clean_page("Text here. [[Category:X]]\n", en, namespaces={14: ("Категорія",)}).paragraphs)


@pytest.mark.parametrize("lang", ["uk", "vi"])
def test_real_dump_heads(lang):
    ns = site_namespaces(read_head(str(shared_file(f"dumps/{lang}wiki-truncated-100k.xml.bz2"))).decode())
    assert TOKENS[lang][0][:-1] in ns[6] and TOKENS[lang][1][:-1] in ns[14]


@pytest.mark.spark
def test_real_ukwiki_and_viwiki_leave_no_file_or_category_text(spark, tmp_path, capsys):
    """Both real dumps with the English lexicon (which knows neither language's names),
    through the job: no file/category link text in any sentence; each dump's cut-off last
    page is counted as truncated, with a warning."""
    from extractor.sentences.segment import save_params, train_punkt
    from jobs.extract import main

    uk = shared_file("dumps/ukwiki-truncated-100k.xml.bz2")
    vi = shared_file("dumps/viwiki-truncated-100k.xml.bz2")
    manifest = tmp_path / "corpora.yaml"
    manifest.write_text(f"- {{name: uk, path: '{uk}', format: mediawiki}}\n"
                        f"- {{name: vi, path: '{vi}', format: mediawiki}}\n", encoding="utf-8")
    punkt = save_params(train_punkt([], ()), tmp_path / "punkt.json")
    out = tmp_path / "out"
    # the English lexicon on Ukrainian and Vietnamese on purpose (the namespaces are tested): no language check
    assert main(["--lang", "en", "--manifest", str(manifest), "--output", str(out), "--stages", "sentences",
                 "--punkt-params", str(punkt), "--language-check", "off"]) == 0
    err = capsys.readouterr().err
    rows = ds.dataset(out / "sentences", format="parquet", partitioning="hive").to_table(
        columns=["corpus", "text"]).to_pylist()
    for lang in ("uk", "vi"):
        texts = [r["text"] for r in rows if r["corpus"] == lang]
        assert len(texts) > 1000
        for token in TOKENS[lang]:
            assert not [t for t in texts if token in t], token
    stats = json.loads((out / "stats.json").read_text())["sentences"]
    assert stats["documents_dropped"]["truncated"] == 2
    assert stats["inputs_damaged"]["no_closing_tag"] == 2
    for path in (uk, vi):
        assert f"warning: {path}: the dump does not end with </mediawiki>: it was cut off" in err
