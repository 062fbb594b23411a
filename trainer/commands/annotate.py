"""`python -m trainer annotate export|import`: human validation of automatic NLI labels.

export: a blind, seeded batch of items for every annotator (CSV) and for Label Studio
        (tasks JSON + labeling config in the dataset's language).
import: annotator CSVs and/or Label Studio exports, one or several rounds -> agreement
        (Fleiss κ, pairwise Cohen κ, Krippendorff α), majority labels, automatic vs human
        (Cohen κ, per-class P/R/F1, confusion matrix), per cartography group, and a
        validated split with its dataset card section. See docs/annotation.md.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

from extractor.core.errors import UserError
from trainer.annotation import agreement
from trainer.annotation import outputs
from trainer.annotation.blind_batches import annotator_names, select_items, write_batch
from trainer.annotation.guidelines import label_lookup, label_set, load_guidelines
from trainer.annotation.readers import check_known, find_manifests, read_annotations
from trainer.annotation.items import cartography_groups, default_lang, load_data, parse_annotator_groups
from trainer.data.loading import add_column_arguments, column_mapping, read_parquet_frame
from trainer.flags import add_output, add_overwrite, output_folder

# --------------------------------------------------------------------------- arguments


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    e = sub.add_parser("export", help="write a blind annotation batch (annotator CSVs, Label Studio tasks)",
                       description="Write a blind, seeded annotation batch: per-annotator CSVs and Label Studio "
                                   "tasks + labeling config. Annotators never see the automatic label, the "
                                   "linking phrase or the source.")
    e.add_argument("--data", required=True, type=Path, help="our splits folder or any NLI file/folder")
    e.add_argument("--split", action="append", default=None,
                   help="split to draw from (repeatable or comma-separated; default: test, or the only split)")
    e.add_argument("--n", type=int, default=None, help="items to annotate (default: all)")
    e.add_argument("--sample", choices=["balanced", "natural"], default="balanced",
                   help="balanced by automatic label (ESNLIR) or in the natural distribution (default balanced)")
    e.add_argument("--seed", type=int, default=0, help="selection and order seed (default 0)")
    e.add_argument("--annotators", action="append", default=None,
                   help="a number (default 3: annotator1..3) or names, comma-separated or repeated")
    e.add_argument("--lang", default=None, help="language of the guidelines (default: the data's lang column, else en)")
    e.add_argument("--labels", default=None, help="comma-separated label set (default: the canonical four)")
    e.add_argument("--unresolved", type=Path, default=None, metavar="IMPORT_DIR",
                   help="next round: only the items without a majority in this `annotate import` output")
    e.add_argument("--round", type=int, default=None, help="round number (default 1, or the next after --unresolved)")
    add_output(e, "batch folder to write", required=True)
    add_overwrite(e, "replace an existing --output folder")
    add_column_arguments(e)

    i = sub.add_parser("import", help="agreement, majority labels and a validated split from annotations",
                       description="Read annotator CSVs and/or Label Studio exports (JSON, JSON_MIN, CSV) of one or "
                                   "several rounds; write agreement.json, report.md, confusion_matrix.png and a "
                                   "validated split.")
    i.add_argument("files", nargs="+", type=Path, metavar="FILES", help="annotator CSVs and/or Label Studio exports")
    i.add_argument("--data", required=True, type=Path, help="the data the batch was exported from")
    i.add_argument("--split", action="append", default=None,
                   help="split of --data (repeatable or comma-separated; default: those of the batch manifests, "
                        "else all)")
    add_output(i, "output folder", required=True)
    i.add_argument("--policy", choices=["majority", "agree"], default="majority",
                   help="majority: drop items without a majority, gold = majority (RoNLI); agree: keep items "
                        "whose majority equals the automatic label (ESNLIR). Default majority")
    i.add_argument("--min-votes", type=int, default=2, help="votes an item needs for a majority (default 2)")
    i.add_argument("--cartography", type=Path, default=None,
                   help="a cartography run (RUN_DIR, its cartography/ folder or metrics.parquet): κ per group")
    i.add_argument("--batch", action="append", type=Path, default=None,
                   help="batch folder or manifest.json of `annotate export` (repeatable; found next to the files "
                        "otherwise)")
    i.add_argument("--annotator-group", action="append", default=None, metavar="NAME=A,B,...",
                   help="a group of annotators, e.g. --annotator-group lay=a1,a2,a3 --annotator-group expert=e1,e2: "
                        "agreement within each group and between their majorities (IndoNLI lay vs expert)")
    i.add_argument("--lang", default=None, help="language of the label names (default: the batch's, else the data's)")
    i.add_argument("--labels", default=None, help="comma-separated label set (default: the batch's, else canonical)")
    add_overwrite(i, "replace an existing --output folder")
    add_column_arguments(i)


# --------------------------------------------------------------------------- shared helpers


def _labels_arg(value) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def _splits_arg(values: list[str] | None) -> list[str] | None:
    """--split a --split b or --split a,b -> [a, b] (order kept, no repeats)."""
    out = [x.strip() for v in values or [] for x in v.split(",") if x.strip()]
    return list(dict.fromkeys(out)) or None


def _command_line() -> str:
    return "python -m trainer " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("__main__.py") \
        else "python -m trainer annotate"


# --------------------------------------------------------------------------- export


def run_export(args) -> int:
    mapping = {**column_mapping(args), "require_label": False}
    data, splits = load_data(args.data, _splits_arg(args.split), mapping, default_test=True)
    labels = label_set(data["label"], _labels_arg(args.labels))
    lang = args.lang or default_lang(data)
    guidelines = load_guidelines(lang, labels)
    round_no, start, previous = 1, 1, None
    if args.unresolved is not None:
        prev = Path(args.unresolved)
        items_file, agreement_file = prev / "items.parquet", prev / "agreement.json"
        if not items_file.exists() or not agreement_file.exists():
            raise UserError(f"{prev}: not an `annotate import` output (no items.parquet/agreement.json) (--unresolved)")
        prev_items = read_parquet_frame(items_file)
        last_import = json.loads(agreement_file.read_text(encoding="utf-8"))
        pending = set(prev_items.loc[prev_items["status"] != "majority", "item_id"].astype(str))
        round_no = max((r["round"] for r in last_import.get("rounds", [])), default=0) + 1
        start = len(last_import.get("annotators", [])) + 1
        previous = {"import_dir": str(prev), "pending": len(pending)}
        data = data[data["pair_id"].isin(pending)].reset_index(drop=True)
        if data.empty:
            raise UserError(f"{prev}: every item has a majority; there is nothing for another round")
    if args.round is not None:
        if args.round < 1:
            raise UserError("--round must be 1 or more")
        round_no = args.round
    names = annotator_names(args.annotators, start=start)
    if args.n is not None and args.n < 1:
        raise UserError("--n must be at least 1")
    items, info = select_items(data, args.n, args.sample, args.seed, labels)
    with output_folder(args.output, args.overwrite) as work:
        manifest = write_batch(work, items, annotators=names, round_no=round_no, seed=args.seed,
                               guidelines=guidelines, manifest={
                                   "data": str(args.data), "splits": splits, "lang": lang,
                                   "guidelines": guidelines.source, "guidelines_fallback": guidelines.fallback,
                                   "labels": list(labels), "selection": info, "previous_round": previous,
                                   "command": _command_line()})
    out = Path(args.output)
    print(f"batch of {len(items)} items (round {round_no}, {args.sample}, seed {args.seed}) from "
          f"{', '.join(splits)} of {args.data}; automatic labels: "
          + ", ".join(f"{k} {v}" for k, v in info["label_counts"].items()))
    for note in filter(None, [info.get("note")] + [f"label {k} has only {v} items" for k, v in
                                                    (info.get("short_labels") or {}).items()]):
        print(f"note: {note}")
    if guidelines.fallback:
        print(f"note: phrase_lexicons/{lang}.yaml has no annotation guidelines; English ones were used")
    print(f"annotators: {', '.join(manifest['annotators'])} -> {out}/annotators/*.csv")
    print(f"Label Studio: {out}/label_studio/tasks.json + config.xml (language {lang})")
    print(f"coordinator only: {out}/manifest.json")
    return 0


# --------------------------------------------------------------------------- import


def run_import(args) -> int:
    t0 = time.perf_counter()
    if args.min_votes < 1:
        raise UserError("--min-votes must be at least 1")
    manifests = list(find_manifests(args.files, args.batch or []).values())
    splits = _splits_arg(args.split)
    if not splits and manifests:
        splits = list(dict.fromkeys(s for m in manifests for s in m.get("splits", []))) or None
    mapping = {**column_mapping(args), "require_label": False}
    data, splits = load_data(args.data, splits, mapping, default_test=False)
    manifest_labels = {tuple(m["labels"]) for m in manifests if m.get("labels")}
    if len(manifest_labels) > 1:
        raise UserError(f"the batch manifests disagree on the label set: {sorted(manifest_labels)}; pass --labels")
    labels = label_set(data["label"], _labels_arg(args.labels) or (list(next(iter(manifest_labels)))
                                                                    if manifest_labels else None))
    lang = args.lang or next((m["lang"] for m in manifests if m.get("lang")), None) or default_lang(data)
    guidelines = load_guidelines(lang, labels)
    ann = read_annotations(args.files, label_lookup(guidelines), labels, args.batch or [])
    check_known(ann, set(data["pair_id"]), f"{args.data} (splits {', '.join(splits)})")
    batch = list(dict.fromkeys([*ann.batch_items, *ann.seen]))
    if not batch:
        raise UserError("no items in the annotation files")
    rows = data.set_index("pair_id").loc[batch]
    table = ann.table
    auto = rows["label"].where(rows["label"].isin(labels), None)
    off_set = rows["label"].notna() & ~rows["label"].isin(labels)
    if off_set.any():
        raise UserError(f"{args.data}: automatic label {rows.loc[off_set, 'label'].iloc[0]!r} of item "
                        f"{rows.index[off_set][0]!r} is not in the label set {', '.join(labels)} (--labels)")
    if args.policy == "agree" and auto.isna().all():
        raise UserError(f"{args.data}: --policy agree needs the automatic labels (no label column?); "
                        "use --policy majority")

    counts = agreement.vote_counts(table, labels, batch)
    maj = agreement.majority(counts, args.min_votes)
    items = pd.DataFrame(index=pd.Index(batch, name="item_id"))
    items["split"] = rows["split"].to_numpy()
    items["auto_label"] = auto.to_numpy()
    items["votes"] = [json.dumps({l: int(v) for l, v in r.items() if v}, ensure_ascii=False)
                      for r in counts.to_dict("records")]
    items = items.join(maj)
    rounds_of = table.groupby("item_id")["round"].agg(lambda s: ",".join(map(str, sorted(set(s)))))
    items["rounds"] = rounds_of.reindex(items.index).fillna("")
    if args.policy == "majority":
        items["kept"] = items["status"] == "majority"
    else:
        items["kept"] = (items["status"] == "majority") & (items["majority"] == items["auto_label"])

    first_round = int(table["round"].min()) if len(table) else 1
    fl = agreement.fleiss(table[table["round"] == first_round], labels)
    ka = agreement.krippendorff_alpha(table, labels)
    gold = items[items["majority"].notna() & items["auto_label"].notna()]
    avm = agreement.auto_vs_majority(gold["auto_label"], gold["majority"], labels)
    status = items["status"].value_counts()
    c = {
        "items_in_batch": int(len(items)),
        "items_labelled": int((items["n_votes"] > 0).sum()),
        "unlabelled": int(status.get("unlabelled", 0)),
        "with_majority": int(status.get("majority", 0)),
        "without_majority": int(status.get("no_majority", 0)),
        "too_few_votes": int(status.get("too_few_votes", 0)),
        "annotations": int(len(table)),
        "annotators": int(table["annotator"].nunique()) if len(table) else 0,
        "empty_labels": ann.counts["empty_labels"],
        "cancelled_label_studio": ann.counts["cancelled"],
        "duplicates_identical": ann.counts["duplicates_identical"],
        "kept": int(items["kept"].sum()),
        "dropped": int((~items["kept"]).sum()),
    }
    bad = []
    if c["empty_labels"]:
        bad.append(f"{c['empty_labels']} empty labels (an annotator skipped the item)")
    if c["cancelled_label_studio"]:
        bad.append(f"{c['cancelled_label_studio']} skipped (cancelled) Label Studio annotations")
    for d in ann.duplicates[:5]:
        bad.append(f"item {d['item_id']} labelled {d['times']} times ({d['label']}) by {d['annotator']}: "
                   + "; ".join(d["where"]) + " (kept once)")
    if len(ann.duplicates) > 5:
        bad.append(f"... {len(ann.duplicates) - 5} more identical repeats")
    if c["unlabelled"]:
        ids = items.index[items["status"] == "unlabelled"]
        bad.append(f"{c['unlabelled']} items nobody labelled: " + ", ".join(ids[:10])
                   + (" ..." if len(ids) > 10 else ""))

    by_split = agreement.group_table(table, items, items["split"], labels) if len(splits) > 1 else []
    by_genre = []
    if "genre" in rows.columns and rows["genre"].notna().any():
        by_genre = agreement.group_table(table, items, rows["genre"].fillna("(none)").astype(str), labels)
    carto_rows, carto_info = [], None
    if args.cartography is not None:
        group_of, carto_info = cartography_groups(args.cartography, items.index)
        carto_rows = agreement.group_table(table, items, group_of, labels)

    annotator_groups = parse_annotator_groups(args.annotator_group, set(table["annotator"]))
    by_annotator_group = agreement.annotator_group_table(table, items["auto_label"], annotator_groups, labels,
                                                  args.min_votes) if annotator_groups else None

    kept_by_split = {("test" if s == "data" else s): int(n) for s, n in
                     items[items["kept"]].groupby("split", sort=False).size().items()}
    summary = {
        "data": str(args.data), "splits": splits, "labels": list(labels), "lang": lang,
        "policy": args.policy, "min_votes": args.min_votes,
        "fleiss_kappa": fl["kappa"],
        "cohen_kappa_auto_vs_majority": avm["cohen_kappa"],
        "krippendorff_alpha": ka["alpha"],
        "per_class": avm["per_class"],
        "counts": c,
        "fleiss": fl, "fleiss_round": first_round, "krippendorff": ka,
        "cohen_pairwise": agreement.cohen_pairwise(table, labels) if len(table) else [],
        "auto_vs_majority": avm,
        "consensus": agreement.consensus_table(table, items),
        "rounds": agreement.rounds_table(table, batch, labels, args.min_votes),
        "annotators": sorted(table["annotator"].unique().tolist()) if len(table) else [],
        "annotators_table": agreement.annotator_table(table, items, labels) if len(table) else [],
        "by_split": by_split, "by_genre": by_genre,
        "by_cartography_group": carto_rows, "cartography": carto_info,
        "by_annotator_group": by_annotator_group,
        "kept_by_split": kept_by_split,
        "bad_input": bad, "duplicates": ann.duplicates,
        "files": ann.files, "manifests": ann.manifests,
        "command": _command_line(),
    }
    frames = outputs.validated_frames(data, items, args.policy)
    section = outputs.card_section(summary)

    with output_folder(args.output, args.overwrite) as work:
        outputs.write_json(work / "agreement.json", {k: v for k, v in summary.items() if k != "command"}
                           | {"command": summary["command"], "seconds": round(time.perf_counter() - t0, 2)})
        (work / "report.md").write_text(outputs.report(summary), encoding="utf-8")
        (work / "human_validation.md").write_text(section, encoding="utf-8")
        outputs.plot_confusion(avm["confusion_matrix"], work / "confusion_matrix.png",
                               f"automatic vs human majority ({avm['items']} items), "
                               f"Cohen κ {outputs.fmt(avm['cohen_kappa'])}")
        flat = items.reset_index()
        flat.to_parquet(work / "items.parquet", index=False)
        flat.to_csv(work / "items.csv", index=False)
        flat[flat["status"] != "majority"][["item_id", "split", "status", "n_votes", "votes"]].to_csv(
            work / "unresolved.csv", index=False)
        table.to_parquet(work / "annotations.parquet", index=False)
        outputs.write_validated(work / "validated", frames, section, lang)

    out = Path(args.output)
    print(f"{c['annotations']} labels by {c['annotators']} annotators on {c['items_in_batch']} items "
          f"({len(summary['rounds'])} round(s)); {c['with_majority']} with a majority, "
          f"{c['without_majority']} without, "
          f"{c['too_few_votes']} with too few votes, {c['unlabelled']} unlabelled")
    print(f"Fleiss kappa {outputs.fmt(fl['kappa'])} ({fl['items']} items x {fl['raters_per_item']} labels, round "
          f"{first_round}); Krippendorff alpha {outputs.fmt(ka['alpha'])}; automatic vs majority: Cohen kappa "
          f"{outputs.fmt(avm['cohen_kappa'])}, micro F1 {outputs.fmt(avm['micro_f1'])}, "
          f"macro F1 {outputs.fmt(avm['macro_f1'])}")
    for line in bad:
        print(f"counted: {line}")
    print(f"validated ({args.policy}): {c['kept']} kept, {c['dropped']} dropped -> {out}/validated")
    print(f"wrote {out}/agreement.json, report.md, confusion_matrix.png, human_validation.md, items.parquet, "
          f"unresolved.csv ({c['items_in_batch'] - c['with_majority']} items for another round)")
    return 0


def run(args) -> int:
    if args.action == "export":
        return run_export(args)
    return run_import(args)
