"""Build the bundled sample dumps (samples/<lang>/*.xml) from their wikitext sources.

    .venv/bin/python samples/build_samples.py          # rewrite samples/ro, samples/es
    .venv/bin/python samples/build_samples.py --check  # exit 1 if an XML file is stale

The pages are written by the project (no third-party text). Each source file in
samples/src/<lang>/ holds one page: a header of `key: value` lines (title, ns, id), a
line `---`, then the wikitext. A line `%%REVISION%%` separates older revisions from the
newer ones (the last one is current, as in a full-history export). A page whose text
starts with a redirect magic word gets a <redirect title=...> element, as MediaWiki writes
it. The output is deterministic (fixed ids and timestamps), so the XML files are committed
and a test checks that they match their sources.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

HERE = Path(__file__).resolve().parent

SITES = {
    "ro": {
        "file": "rowiki-sample-pages-articles.xml",
        "schema": "0.11",
        "sitename": "Wikipedia",
        "dbname": "rowiki",
        "base": "https://ro.wikipedia.org/wiki/Pagina_principal%C4%83",
        "namespaces": [(-2, "Media"), (-1, "Special"), (0, ""), (1, "Discuție"), (2, "Utilizator"),
                       (3, "Discuție Utilizator"), (4, "Wikipedia"), (5, "Discuție Wikipedia"),
                       (6, "Fișier"), (7, "Discuție Fișier"), (8, "MediaWiki"), (10, "Format"),
                       (11, "Discuție Format"), (12, "Ajutor"), (14, "Categorie"),
                       (15, "Discuție Categorie"), (100, "Portal"), (828, "Modul")],
        "redirect_words": ("#REDIRECTEAZA", "#REDIRECT"),
    },
    "es": {
        "file": "eswiki-sample-pages-articles.xml",
        "schema": "0.10",
        "sitename": "Wikipedia",
        "dbname": "eswiki",
        "base": "https://es.wikipedia.org/wiki/Wikipedia:Portada",
        "namespaces": [(-2, "Medio"), (-1, "Especial"), (0, ""), (1, "Discusión"), (2, "Usuario"),
                       (3, "Usuario discusión"), (4, "Wikipedia"), (5, "Wikipedia discusión"),
                       (6, "Archivo"), (7, "Archivo discusión"), (8, "MediaWiki"), (10, "Plantilla"),
                       (11, "Plantilla discusión"), (12, "Ayuda"), (14, "Categoría"),
                       (15, "Categoría discusión"), (100, "Portal"), (104, "Anexo"),
                       (105, "Anexo discusión"), (828, "Módulo")],
        "redirect_words": ("#REDIRECCIÓN", "#REDIRECCION", "#REDIRECT"),
    },
    "en": {
        "file": "en-sample-pages-articles.xml",
        "schema": "0.11",
        "sitename": "Wikipedia",
        "dbname": "enwiki",
        "base": "https://en.wikipedia.org/wiki/Main_Page",
        "namespaces": [(-2, "Media"), (-1, "Special"), (0, ""), (1, "Talk"), (2, "User"), (3, "User talk"),
                       (4, "Wikipedia"), (5, "Wikipedia talk"), (6, "File"), (7, "File talk"),
                       (8, "MediaWiki"), (10, "Template"), (11, "Template talk"), (12, "Help"),
                       (14, "Category"), (15, "Category talk"), (100, "Portal"), (828, "Module")],
        "redirect_words": ("#REDIRECT",),
    },
}

_REDIRECT_TARGET = re.compile(r"\[\[([^\]|#]+)")


def read_source(path: Path) -> dict:
    raw = path.read_text(encoding="utf-8")
    head, sep, body = raw.partition("\n---\n")
    if not sep:
        raise ValueError(f"{path}: missing the '---' line after the header")
    meta = {}
    for line in head.splitlines():
        if line.strip():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    for key in ("title", "ns", "id"):
        if key not in meta:
            raise ValueError(f"{path}: header lacks '{key}:'")
    revisions = [r.strip("\n") + "\n" for r in body.split("\n%%REVISION%%\n")]
    return {"title": meta["title"], "ns": int(meta["ns"]), "id": int(meta["id"]), "revisions": revisions}


def sha1_base36(text: str) -> str:
    """The revision checksum as MediaWiki writes it (SHA-1 in base 36, 31 characters)."""
    n = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


def build_xml(lang: str) -> str:
    site = SITES[lang]
    schema = site["schema"]
    pages = [read_source(p) for p in sorted((HERE / "src" / lang).glob("*.wiki"))]
    lines = [
        f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-{schema}/" '
        f'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="http://www.mediawiki.org/xml/export-{schema}/ '
        f'http://www.mediawiki.org/xml/export-{schema}.xsd" version="{schema}" xml:lang="{lang}">',
        "  <siteinfo>",
        f"    <sitename>{site['sitename']}</sitename>",
        f"    <dbname>{site['dbname']}</dbname>",
        f"    <base>{escape(site['base'])}</base>",
        "    <generator>MediaWiki 1.42.0-wmf.5</generator>",
        "    <case>first-letter</case>",
        "    <namespaces>",
    ]
    for key, name in site["namespaces"]:
        if name:
            lines.append(f'      <namespace key="{key}" case="first-letter">{escape(name)}</namespace>')
        else:
            lines.append(f'      <namespace key="{key}" case="first-letter" />')
    lines += ["    </namespaces>", "  </siteinfo>"]
    for page in pages:
        lines += ["  <page>", f"    <title>{escape(page['title'])}</title>", f"    <ns>{page['ns']}</ns>",
                  f"    <id>{page['id']}</id>"]
        current = page["revisions"][-1]
        if current.lstrip().upper().startswith(site["redirect_words"]):
            target = _REDIRECT_TARGET.search(current)
            if target:
                lines.append(f"    <redirect title={quoteattr(target.group(1).strip())} />")
        parent = None
        for i, text in enumerate(page["revisions"]):
            rev_id = page["id"] * 100 + i + 1
            lines.append("    <revision>")
            lines.append(f"      <id>{rev_id}</id>")
            if parent is not None:
                lines.append(f"      <parentid>{parent}</parentid>")
            day = 1 + (page["id"] % 27)
            lines.append(f"      <timestamp>2024-0{1 + i}-{day:02d}T10:{page['id'] % 60:02d}:00Z</timestamp>")
            lines.append("      <contributor>")
            lines.append("        <username>NLI corpus engine samples</username>")
            lines.append("        <id>1</id>")
            lines.append("      </contributor>")
            lines.append("      <model>wikitext</model>")
            lines.append("      <format>text/x-wiki</format>")
            nbytes = len(text.encode("utf-8"))
            lines.append(f'      <text bytes="{nbytes}" xml:space="preserve">{escape(text)}</text>')
            lines.append(f"      <sha1>{sha1_base36(text)}</sha1>")
            lines.append("    </revision>")
            parent = rev_id
        lines.append("  </page>")
    lines.append("</mediawiki>")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build samples/<lang>/*.xml from samples/src/<lang>/*.wiki")
    ap.add_argument("--check", action="store_true", help="only check that the XML files are up to date")
    ap.add_argument("langs", nargs="*", default=sorted(SITES))
    args = ap.parse_args(argv)
    stale = []
    for lang in args.langs:
        out = HERE / lang / SITES[lang]["file"]
        xml = build_xml(lang)
        if args.check:
            if not out.exists() or out.read_text(encoding="utf-8") != xml:
                stale.append(str(out))
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(xml, encoding="utf-8")
        print(f"wrote {out} ({len(xml.encode('utf-8'))} bytes)")
    if stale:
        print("stale: " + ", ".join(stale) + " (run samples/build_samples.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
