"""Simulated annotators: fill a batch's CSVs to rehearse a round before paying people.

    python -m trainer.annotation.simulate BATCH_DIR --data SPLITS --accuracy 0.9 0.8 0.7 [--seed 0]
        [--skip 0.02]

Annotator k keeps the automatic label with probability ``accuracy[k]`` and otherwise picks
one of the other labels uniformly; with probability ``skip`` the row is left empty. Every
draw is ``stable_unit(item, annotator, seed)``: the same batch and seed give the same labels.
So the disagreement is known in advance: the expected share of an annotator's labels equal
to the automatic one is ``accuracy``, and two annotators agree with probability
``a*b + (1-a)*(1-b)/(k-1)`` over k labels.
"""
from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash, stable_unit
from trainer.annotation.items import load_data
from trainer.annotation.blind_batches import read_manifest


def simulate_label(item: str, annotator: str, auto: str, labels: list[str], accuracy: float, seed: int,
                   skip: float = 0.0) -> str:
    if skip and stable_unit(item, annotator, "skip", seed=seed) < skip:
        return ""
    if stable_unit(item, annotator, "keep", seed=seed) < accuracy:
        return auto
    others = [l for l in labels if l != auto]
    return others[stable_hash(item, annotator, "other", seed=seed) % len(others)]


def fill_csv(path: Path, auto: dict[str, str], labels: list[str], accuracy: float, seed: int, skip: float) -> int:
    """Fill the label column of one annotator CSV in place; returns the rows labelled."""
    text = path.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    i_item, i_label = header.index("item_id"), header.index("label")
    annotator = path.stem.split("-", 1)[-1]
    n = 0
    for row in body:
        row[i_label] = simulate_label(row[i_item], annotator, auto[row[i_item]], labels, accuracy, seed, skip)
        n += bool(row[i_label])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *body])
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m trainer.annotation.simulate", description=__doc__.splitlines()[0])
    p.add_argument("batch", type=Path, help="a folder written by `annotate export`")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--accuracy", type=float, nargs="+", default=[0.9, 0.8, 0.7],
                   help="per annotator, in the manifest's order (the last one repeats)")
    p.add_argument("--skip", type=float, default=0.0, help="share of rows left empty")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        manifest = read_manifest(args.batch / "manifest.json")
        if manifest is None:
            raise UserError(f"{args.batch}: no manifest.json of `annotate export`")
        data, _ = load_data(args.data, manifest["splits"], {"require_label": True}, default_test=False)
        auto = dict(zip(data["pair_id"], data["label"]))
        labels = list(manifest["labels"])
        for k, rel in enumerate(manifest["files"]["annotators"]):
            acc = args.accuracy[min(k, len(args.accuracy) - 1)]
            n = fill_csv(args.batch / rel, auto, labels, acc, args.seed, args.skip)
            print(f"{rel}: {n} labels (accuracy {acc})")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
