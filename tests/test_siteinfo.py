"""What a dump's siteinfo tells the card (issue 56): the site, the genre and, for a
Wikimedia project only, the text license; nothing guessed for another site. Real dumps of
../shared/data, one with its siteinfo rewritten as another site's export would have it."""
from __future__ import annotations

from pathlib import Path

from extractor.sentences.readers import site_info
from extractor.job.inputs import corpora_from_args
from extractor.splits import card
from tests.conftest import shared_file


def rewritten(tmp_path: Path, name: str, sitename: str, base: str, dbname: str) -> Path:
    """The real 3-page rowiki dump with the siteinfo of another site."""
    text = shared_file("dumps/rowiki-real-3pages.xml").read_text(encoding="utf-8")
    head, rest = text.split("</siteinfo>", 1)
    info = site_info(head)
    head = head.replace(f"<sitename>{info['sitename']}</sitename>", f"<sitename>{sitename}</sitename>")
    head = head.replace(f"<base>{info['base']}</base>", f"<base>{base}</base>")
    head = head.replace(f"<dbname>{info['dbname']}</dbname>", f"<dbname>{dbname}</dbname>")
    out = tmp_path / name
    out.write_text(head + "</siteinfo>" + rest, encoding="utf-8")
    return out


def test_a_wikipedia_dump_is_wikipedia_text_under_its_license():
    [spec] = corpora_from_args([str(shared_file("dumps/rowiki-real-3pages.xml"))], None, None)
    assert spec.genre == "wikipedia" and spec.options["site"] == "Wikipedia"
    assert spec.options["url_of_site"] == "https://ro.wikipedia.org/wiki/Pagina_principală"
    assert card.corpus_licenses([spec], "") == "cc-by-sa-4.0"
    assert card.corpus_licenses([spec], "cc-by-4.0") == "cc-by-4.0"  # an explicit --license wins


def test_a_wikivoyage_export_is_travel_text_and_a_wikitravel_one_has_no_guessed_license(tmp_path):
    voyage = rewritten(tmp_path, "rowikivoyage.xml", "Wikicălători", "https://ro.wikivoyage.org/wiki/Pagina_principală",
                       "rowikivoyage")
    travel = rewritten(tmp_path, "wikitravel-ro.xml", "Wikitravel", "https://wikitravel.org/ro/Pagina_principală",
                       "wikitravel_ro")
    v, t = corpora_from_args([str(voyage), str(travel)], None, None)
    assert (v.genre, v.options["site"], card.corpus_licenses([v], "")) == ("wikivoyage", "Wikicălători", "cc-by-sa-4.0")
    assert (t.genre, t.options["site"]) == ("wikitravel", "Wikitravel")
    assert card.corpus_licenses([t], "") == "unknown" and "site_license" not in t.options
    assert card.corpus_licenses([v, t], "") == ["cc-by-sa-4.0", "unknown"]
    [given] = corpora_from_args([str(travel)], "ro-travel", "travel guide")
    assert (given.name, given.genre) == ("ro-travel", "travel guide")  # the flags win


def test_a_dump_without_siteinfo_keeps_the_format_s_genre():
    [spec] = corpora_from_args([str(shared_file("dumps/enwiki-tables-5pages.xml.bz2"))], None, None)
    assert spec.genre == "wikipedia" and "site" not in spec.options and card.corpus_licenses([spec], "") == "unknown"
