"""Stage 1's sentence rows by column (`process.SentenceColumns`): the tables taken from a
processor in row groups are the rows one tuple per sentence would give, and a long stream
of documents keeps only the documents its unwritten rows refer to."""
from __future__ import annotations

import pyarrow as pa

from extractor.sentences.process import DocumentProcessor, file_schema
from extractor.sentences.readers import plain_paragraphs
from extractor.sentences.segment import params_to_dict, train_punkt
from extractor.lexicon.lexicon import load_lexicon
from tests.conftest import shared_file

MIN_CHARS = 40
GROUP = 997   # rows per taken table: cuts documents and paragraphs anywhere


def _documents():
    """Romanian novels cut into documents of 12 paragraphs (one title each)."""
    docs = []
    for path in sorted(shared_file("text/eltec-rom-20").glob("*.txt"))[:8]:
        paras = plain_paragraphs(path.read_text(encoding="utf-8"))
        docs += [(f"{path.stem}-{k}", paras[k:k + 12]) for k in range(0, len(paras), 12)]
    return docs


def test_tables_taken_in_row_groups_are_the_rows_of_each_sentence():
    docs = _documents()
    lexicon = load_lexicon("ro")
    punkt = params_to_dict(train_punkt([p for _, paras in docs[:60] for p in paras], lexicon.abbreviations))
    corpus = {"name": "novels", "genre": "fiction", "lang": "ro", "role": "train"}
    proc = DocumentProcessor(corpus, lexicon, punkt, MIN_CHARS)
    tables, most_documents_held = [], 0
    for key, paras in docs:
        proc.plain_document(key, key.upper(), None, "\n\n".join(paras))
        while len(proc.rows) >= GROUP:
            tables.append(proc.take_table(GROUP))
            most_documents_held = max(most_documents_held, len(proc.rows.doc_ids))
    tables.append(proc.take_table())
    assert len(proc.rows) == 0 and proc.rows.doc_ids == [] and proc.rows.sections == []

    expected = []   # one tuple per sentence, in the schema's column order
    for key, paras in docs:
        kept = [sents for sents in map(proc.segmenter.split, plain_paragraphs("\n\n".join(paras))) if sents]
        for para_idx, sents in enumerate(kept):
            expected += [("fiction", "ro", f"novels:{key}", key.upper(), "", para_idx, sent_idx, text,
                          len(text) < MIN_CHARS, "train") for sent_idx, text in enumerate(sents)]
    got = pa.concat_tables(tables)
    assert got.schema == file_schema()
    assert len(expected) > 10 * GROUP and len(docs) > 300
    assert [t.num_rows for t in tables[:-1]] == [GROUP] * (len(tables) - 1)
    assert got.equals(pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(zip(*expected), file_schema())],
                                           schema=file_schema()))
    assert proc.counts["sentences", "total"] == len(expected)
    assert proc.counts["sentences", "short"] == sum(row[8] for row in expected) > 0
    # a table's rows span a few documents of about 30-150 sentences: the processor never
    # holds the titles of the documents already written
    assert most_documents_held <= 40
