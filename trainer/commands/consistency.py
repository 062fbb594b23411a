"""`python -m trainer consistency RUN_DIR --data FILE`: meta-inferential consistency of a
run's labels (the method and its readings: trainer/analysis/consistency.py,
trainer/analysis/logic.py; docs/consistency.md).

Outputs (``--output``, default ``RUN_DIR/consistency/``, written beside it and swapped in
at the end): ``metrics.json``, ``table.md``,
``items.parquet``, ``sources.parquet``, ``consistency.png``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extractor.core.errors import UserError
from trainer.analysis import logic
from trainer.analysis.consistency import (KIND_ORDER, OTHER, allowed_columns, build_inferred, choose_split,
                                          dedupe_sources, markdown_table, model_letters, parse_letter_map,
                                          plot_scores, predict_pairs, read_generated, read_sentences,
                                          sample_items, score_rows, sentence_chains, source_frame, summarize,
                                          summary_text, has_nli_letters, write_frame)
from trainer.training.evaluation import run_mapping
from trainer.analysis.metrics import compute_metrics
from trainer.data.loading import add_column_arguments, load_nli
from trainer.flags import add_output, add_overwrite, output_folder, refuse_existing
from trainer.training.runs import load_run, write_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--data", type=Path, help="NLI data with shared premises (file or dataset folder)")
    p.add_argument("--split", default=None, help="split of a dataset folder (default: test, or the only split)")
    p.add_argument("--generated", type=Path, action="extend", nargs="+", default=[],
                   help="JSONL of generated items: premise, hypothesis, label (intended), or premise with "
                        "entailment/contradiction/neutral columns; repeatable")
    p.add_argument("--sentences", type=Path, help="our sentence table (sentences/ Parquet): consecutive "
                                                  "sentences of a paragraph form chains")
    p.add_argument("--max-chains", type=int, default=20000,
                   help="at most this many sentence triples from --sentences (stable sample; default 20000)")
    p.add_argument("--label-map", action="extend", nargs="+", default=[], metavar="LABEL=E|C|N|-",
                   help="the NLI relation a label names (E, C, N, or - for none); repeatable. "
                        "entailment/contradiction/neutral map themselves")
    p.add_argument("--source-labels", choices=["pred", "gold"], default="pred",
                   help="labels of the source items that the readings start from in the unfiltered view: "
                        "the model's (default) or the gold ones (the paper's Table 7)")
    p.add_argument("--readings", action="extend", nargs="+", choices=list(logic.READINGS), default=None,
                   help="readings to report (default: MC SC EI)")
    p.add_argument("--max-items", type=int, default=None, help="at most this many inferred items per kind "
                                                               "(stable sample)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stable samples")
    p.add_argument("--batch-size", type=int, default=1024, help="pairs per prediction batch")
    add_output(p, "output folder (default: RUN_DIR/consistency)")
    add_overwrite(p, "replace an existing output folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    if args.data is None and args.sentences is None:
        raise UserError("nothing to test: give --data FILE (and optionally --generated FILE) or --sentences DIR")
    if args.generated and args.data is None:
        raise UserError("--generated needs --data: generated items chain onto the data's hypotheses")
    readings = list(dict.fromkeys(args.readings or logic.READINGS))
    label_map = parse_letter_map(args.label_map)
    out = refuse_existing(args.output or Path(args.run_dir) / "consistency", args.overwrite)
    run_ = load_run(args.run_dir)
    to_letter = model_letters(run_.labels, label_map)

    parts: list[pd.DataFrame] = []
    counts: dict[str, Any] = {}  # numbers, and per-kind counts
    items = pd.DataFrame(columns=["kind", "c", "source1", "source2", "premise", "hypothesis"])
    if args.data is not None:
        splits = load_nli(args.data, **run_mapping(args, run_), require_label=False)
        df = choose_split(splits, args.split, args.data)
        parts.append(source_frame(df, "data", label_map, str(args.data)))
        for path in args.generated:
            parts.append(source_frame(read_generated(path), "generated", label_map, str(path)))
        sources, dupes = dedupe_sources(pd.concat(parts, ignore_index=True))
        items, counts = build_inferred(sources)
        counts["duplicate_sources_dropped"] = dupes
        counts["data_items"] = int((sources["origin"] == "data").sum())
        counts["generated_items"] = int((sources["origin"] == "generated").sum())
    else:
        sources = pd.DataFrame(columns=["sid", "premise", "hypothesis", "gold_label", "gold", "origin"])
    if args.sentences is not None:
        s_sources, s_items, s_counts = sentence_chains(read_sentences(args.sentences), max_chains=args.max_chains,
                                                       seed=args.seed)
        sources = pd.concat([sources, s_sources], ignore_index=True)
        items = pd.concat([items, s_items], ignore_index=True)
        counts["sentence_table"] = s_counts
    items, sampled_out = sample_items(items, args.max_items, args.seed)
    counts["items_per_kind"] = {k: int((items["kind"] == k).sum()) for k in KIND_ORDER}
    if sampled_out:
        counts["items_left_out_by_max_items"] = sampled_out
    if len(items) == 0:
        raise UserError(f"{args.data or args.sentences}: no inferred items (no shared premises, no chains); "
                        "the data needs premises with several hypotheses (as SNLI) or --generated/--sentences")

    # predict every distinct text pair once
    pair_key = list(zip(sources["premise"], sources["hypothesis"])) + list(zip(items["premise"], items["hypothesis"]))
    uniq = list(dict.fromkeys(pair_key))
    probs = predict_pairs(run_, [p for p, _ in uniq], [h for _, h in uniq], batch_size=args.batch_size,
                          progress=not args.no_progress)
    index = {k: i for i, k in enumerate(uniq)}
    labels = np.asarray(run_.labels, dtype=object)

    def attach(frame: pd.DataFrame) -> pd.DataFrame:
        rows = np.array([index[k] for k in zip(frame["premise"], frame["hypothesis"])], dtype=np.int64)
        p = probs[rows] if len(rows) else np.zeros((0, len(labels)), dtype=np.float32)
        frame = frame.copy()
        frame["pred"] = labels[p.argmax(1)] if len(p) else []
        frame["pred_letter"] = frame["pred"].map(to_letter)
        for k, lab in enumerate(run_.labels):
            frame[f"prob_{lab}"] = p[:, k]
        return frame

    sources = attach(sources)
    items = attach(items)
    by_sid = sources.set_index("sid")
    pred_of, gold_of = by_sid["pred_letter"].to_dict(), by_sid["gold"].to_dict()

    def letters(row, table):
        out = [table.get(s) for s in (row.source1, row.source2) if s is not None and not pd.isna(s)]
        return None if any(not isinstance(v, str) for v in out) else "".join(out)

    items["source_pred"] = [letters(r, pred_of) for r in items.itertuples()]
    items["source_gold"] = [letters(r, gold_of) for r in items.itertuples()]
    items["filtered"] = [g is not None and g == p for g, p in zip(items["source_gold"], items["source_pred"])]
    base = "source_pred" if args.source_labels == "pred" else "source_gold"
    if base == "source_gold" and items["source_gold"].isna().all():
        raise UserError(f"{args.data or args.sentences}: --source-labels gold needs gold labels on the source items "
                        "(none here); use --source-labels pred")
    items = pd.concat([items, allowed_columns(items, base, readings)], axis=1)
    for r in readings:
        items[f"ok_{r}"] = [a is not None and p in a for p, a in zip(items["pred_letter"], items[f"allowed_{r}"])]

    views = {"unfiltered": (items, base), "filtered": (items[items["filtered"].astype(bool)], "source_pred")}
    result = {"run_dir": str(args.run_dir), "data": str(args.data) if args.data else None,
              "split": args.split, "generated": [str(p) for p in args.generated],
              "sentences": str(args.sentences) if args.sentences else None,
              "model_labels": run_.labels, "label_map": to_letter, "source_labels": args.source_labels,
              "readings": readings, "counts": counts, "views": {}, "derivation": logic.allowed_table(readings)}
    has = items[base].map(lambda t: isinstance(t, str))
    counts["items_with_non_nli_source_label"] = int((has & ~items[base].map(has_nli_letters)).sum())
    counts["items_without_source_labels"] = int((~has).sum())
    for view, (frame, col) in views.items():
        result["views"][view] = {"items": int(len(frame)), "summary": summarize(frame, col, readings),
                                 "rows": score_rows(frame, col, readings)}
    gen = sources[sources["origin"] == "generated"]
    if len(gen):
        g = gen[gen["gold"].isin(logic.LETTERS)]
        m = compute_metrics(g["gold"].tolist(), g["pred_letter"].fillna(OTHER).tolist(), list(logic.LETTERS))
        result["generated_items"] = {"n": int(len(g)), "accuracy": m["accuracy"], "macro_f1": m["macro_f1"]}
    data_src = sources[(sources["origin"] == "data") & sources["gold"].isin(logic.LETTERS)]
    if len(data_src):
        m = compute_metrics(data_src["gold"].tolist(), data_src["pred_letter"].fillna(OTHER).tolist(),
                            list(logic.LETTERS))
        result["data_items"] = {"n": int(len(data_src)), "accuracy": m["accuracy"], "macro_f1": m["macro_f1"]}

    md = []
    has_gold = bool(items["filtered"].any())
    if has_gold:
        md.append(markdown_table(result["views"]["filtered"]["rows"], readings,
                                 title="filtered: source predictions correct (Table 4 layout)"))
    md.append(markdown_table(result["views"]["unfiltered"]["rows"], readings,
                             title=f"unfiltered, source labels = {args.source_labels} (Table 7 layout)"))
    table = "\n".join(md)

    with output_folder(out, args.overwrite) as work:
        write_json(work / "metrics.json", result)
        (work / "table.md").write_text(table, encoding="utf-8")
        write_frame(items, work / "items.parquet")
        write_frame(sources, work / "sources.parquet")
        view = "filtered" if has_gold else "unfiltered"
        plot_scores(result["views"][view]["rows"], readings, work / "consistency.png",
                    f"meta-inferential consistency ({view}): {Path(args.run_dir).name}")

    per_kind = ", ".join(f"{k} {n}" for k, n in counts["items_per_kind"].items())
    print(f"inferred items: {per_kind}")
    if "premise_groups" in counts:
        print(f"premise groups: {counts['premise_groups']} ({counts['premise_groups_with_2_or_more']} with 2+ "
              f"hypotheses); chain links: {counts['chain_links']}")
    for key, label in (("data_items", "data items"), ("generated_items", "generated items")):
        if key in result:
            print(f"{label}: n={result[key]['n']}, accuracy {result[key]['accuracy']:.4f}, "
                  f"macro-F1 {result[key]['macro_f1']:.4f}")
    print()
    print(table)
    for view in ("filtered", "unfiltered") if has_gold else ("unfiltered",):
        print(f"{view}: % allowed over constrained items: "
              + "; ".join(summary_text(r, result["views"][view]["summary"][r]) for r in readings))
    print(f"wrote {out}/metrics.json, table.md, items.parquet")
    return 0
