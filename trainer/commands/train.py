"""`python -m trainer train`: baselines and transformers on any NLI data, one run directory
(the run itself, from settings to outputs: trainer/training/pipeline.py; docs/trainer.md).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from trainer.analysis.cartography import SUBSETS
from trainer.data.loading import add_column_arguments
from trainer.flags import add_output
from trainer.models import INPUT_MODES, MODELS
from trainer.training.curriculum import CURRICULA
from trainer.models.distributed import setup_run
from trainer.training.pipeline import run_training


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("data")
    d.add_argument("--data", type=Path, help="splits folder (train/ validation/ test/) or any dataset folder")
    d.add_argument("--train", nargs="+", action="extend", default=[], metavar="FILE[::KEY=VALUE,...]",
                   help="training file(s) (instead of --data); repeatable; several are merged, each with its own "
                        "column mapping after '::' (premise=, hypothesis=, label=, id_col=, label_names=a;b, "
                        "label_map=src:dst;src:dst)")
    d.add_argument("--validation", nargs="+", action="extend", default=[], metavar="FILE[::...]",
                   help="validation file(s); repeatable; several are merged")
    d.add_argument("--test", type=Path, nargs="+", action="extend", default=[],
                   help="test file(s) or dataset folder(s) (a folder's test split, else its only split), each "
                        "reported under its stem; repeatable (--test A --test B keeps both)")
    d.add_argument("--train-size", type=int,
                   help="stratified, seeded subsample of N training rows (label shares kept)")
    d.add_argument("--allow-new-labels", action="store_true",
                   help="train labels outside the dataset's declared label set as new classes (default: error)")
    d.add_argument("--duplicate-ids", choices=["error", "drop"], default="error",
                   help="an id repeated with different content within a split: error (default) or drop all "
                        "but the first row (exact repeats are always dropped and counted)")
    d.add_argument("--by", action="append", default=[], metavar="COL",
                   help="also report metrics per value of test column COL (repeatable; list columns per tag)")
    add_column_arguments(p)
    m = p.add_argument_group("model")
    m.add_argument("--model", required=True, choices=sorted(MODELS))
    m.add_argument("--input-mode", choices=INPUT_MODES, default="pair",
                   help="pair, or one sentence only (hypothesis-only / premise-only artifact baselines)")
    add_output(m, "run directory to write", required=True)
    m.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--seeds", type=int, default=1, help="train N runs (seeds seed..seed+N-1), select on validation")
    m.add_argument("--grid", action="store_true", help="grid search (RoNLI Appendix B ranges) on validation macro-F1")
    m.add_argument("--grid-values", action="append", default=[], metavar="KEY=V1,V2",
                   help="replace the grid of one hyper-parameter (repeatable), e.g. lr=1e-5,3e-5")
    m.add_argument("--oversample", action="store_true", help="copy minority-class examples up to the majority count")
    m.add_argument("--class-weights", action="store_true", help="weight the loss by inverse class frequency")
    m.add_argument("--C", type=float, help="regularisation of SVM / logistic regression")
    m.add_argument("--kernel", choices=["linear", "rbf"], help="cbow-svm kernel")
    m.add_argument("--vectors", type=Path,
                   help="fastText .bin or .vec word vectors (cbow-*); default: trained on train")
    m.add_argument("--vector-size", type=int, help="dimension of vectors trained on the training split (default 100)")
    t = p.add_argument_group("torch models (cbow-softmax, transformer)")
    t.add_argument("--pretrained", help="checkpoint directory or hub name (transformer)")
    t.add_argument("--encoding", choices=["cross", "separate"], default="cross")
    t.add_argument("--freeze-encoder", action="store_true", help="train the head only (RoNLI)")
    t.add_argument("--max-length", type=int)
    t.add_argument("--epochs", type=int)
    t.add_argument("--batch-size", type=int)
    t.add_argument("--grad-accum", type=int, help="forward passes per optimisation step")
    t.add_argument("--lr", type=float)
    t.add_argument("--head-lr", type=float, help="peak learning rate of a new head on a pretrained encoder "
                                                 "(transformer; default: docs/trainer.md, Defaults)")
    t.add_argument("--weight-decay", type=float)
    t.add_argument("--warmup-ratio", type=float)
    t.add_argument("--max-grad-norm", type=float, help="gradient clipping (0: off)")
    t.add_argument("--patience", type=int, help="early stopping patience in epochs (0: off)")
    t.add_argument("--head-hidden", type=int, help="hidden units of the separate-encoding head")
    t.add_argument("--pooling", choices=["auto", "cls", "mean", "last"],
                   help="one vector per sequence (transformer): auto (default: a sentence-transformers "
                        "checkpoint's own pooling, last for decoders, else cls), cls, mean, last")
    t.add_argument("--dropout", type=float)
    t.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"])
    t.add_argument("--no-group-by-length", dest="group_by_length", action="store_false", default=None)
    t.add_argument("--device", help="auto (default), cpu, cuda, cuda:1, mps")
    t.add_argument("--eval-batch-size", type=int)
    t.add_argument("--compile", action="store_true", default=None,
                   help="torch.compile the training forward (faster GPU steps after ~40 s of compiling)")
    t.add_argument("--deterministic", action="store_true", default=None,
                   help="deterministic GPU kernels: the same numbers in every run and after --resume (slower)")
    t.add_argument("--no-progress", dest="progress", action="store_false", default=None)
    t.add_argument("--resume", action="store_true", help="continue from RUN_DIR/checkpoint")
    t.add_argument("--keep-checkpoint", action="store_true", help="keep RUN_DIR/checkpoint after training")
    t.add_argument("--dynamics", choices=["forward", "pass", "off"],
                   help="training dynamics for cartography (transformer): forward (default: recorded from the "
                        "training forward pass, free), pass (a no-grad pass after each epoch), off "
                        "(docs/cartography.md)")
    c = p.add_argument_group("cartography and curriculum (trainer.analysis.cartography, trainer.training.curriculum)")
    c.add_argument("--subset", choices=SUBSETS, help="train on a cartography region of the training set")
    c.add_argument("--cartography-from", type=Path, help="run (or cartography) directory with training dynamics")
    c.add_argument("--curriculum", choices=CURRICULA, help="batch schedule (torch models)")
    c.add_argument("--sts-from", type=Path, help="run whose embeddings rank pairs for --curriculum sts")


def run(args, callbacks=()) -> int:
    """Entry point of `train`; `callbacks` (torch models) is for Python callers and tests."""
    args.output = setup_run(Path(args.output), args.device)  # torchrun: ranks > 0 write a scratch copy
    return run_training(args, list(callbacks))
