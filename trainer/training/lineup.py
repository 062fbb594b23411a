"""A RoNLI-style line-up from one YAML file (`python -m trainer experiment`, trainer/commands/experiment.py).

The file names the data and model once (``train_args``: flags of ``train``), the number of
seeds, and a line-up of entries; each entry is one ``train`` run with extra flags:
``oversample``, ``subset`` (e2l, a, h2l, e2l+a), ``curriculum`` (length, sts, cart, cart++,
cart-stra++) or any ``args``. Entries that need data cartography or sentence embeddings
use the ``reference`` entry's run (default: the first entry, the baseline): its
cartography is computed once after it is trained. Every run goes to ``OUT/<name>/`` (OUT:
``--output``, else the file's ``output``); a finished run (``metrics.json`` present) is kept
unless ``--overwrite``. The results are one
markdown file, ``OUT/results.md``, with the layouts of RoNLI Tables 5 (micro/macro F1)
and 4 (per-class precision, recall, F1), and ``OUT/results.json``. See
``examples/lineup-cbow-cpu.yaml``.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from extractor.core.errors import UserError, yaml_problem
from trainer.analysis.cartography import SUBSETS
from trainer.analysis.significance import cochrans_q, load_predictions
from trainer.training.curriculum import CURRICULA

CART_CURRICULA = {"cart", "cart++", "cart-stra++"}
DISPLAY = {  # RoNLI's method names
    "length": "Length-CL", "sts": "STS-CL", "cart": "Cart-CL", "cart++": "Cart-CL++",
    "cart-stra++": "Cart-Stra-CL++", "e2l": "E2L", "a": "A", "h2l": "H2L", "e2l+a": "E2L + A",
}



@dataclass
class Entry:
    name: str
    label: str
    args: dict = field(default_factory=dict)
    subset: str | None = None
    curriculum: str | None = None

    @property
    def needs_cartography(self) -> bool:
        return self.subset is not None or self.curriculum in CART_CURRICULA

    @property
    def oversampled(self) -> bool:
        return bool(self.args.get("oversample"))


@dataclass
class Lineup:
    path: Path
    name: str
    out: Path
    train_args: dict
    seeds: int
    reference: str
    split: str | None
    cartography_args: dict
    entries: list[Entry]


def load_lineup(path) -> Lineup:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        spec = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({yaml_problem(exc)})") from None
    if not isinstance(spec, dict) or not spec.get("lineup"):
        raise UserError(f"{path}: needs a mapping with a non-empty 'lineup' list")
    known = {"name", "output", "train_args", "seeds", "reference", "split", "cartography_args", "lineup"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise UserError(f"{path}: unknown key(s) {unknown}; known: {sorted(known)}")

    entries, seen = [], set()
    for i, raw in enumerate(spec["lineup"]):
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, dict) or "name" not in raw:
            raise UserError(f"{path}: lineup item {i + 1} needs a 'name'")
        extra = sorted(set(raw) - {"name", "label", "args", "subset", "curriculum", "oversample"})
        if extra:
            raise UserError(f"{path}: lineup item {raw['name']!r}: unknown key(s) {extra}")
        name = str(raw["name"])
        if name in seen or "/" in name:
            raise UserError(f"{path}: lineup name {name!r} is repeated or contains '/'")
        seen.add(name)
        args = dict(raw.get("args") or {})
        if raw.get("oversample"):
            args["oversample"] = True
        subset, curriculum = raw.get("subset"), raw.get("curriculum")
        if subset is not None and subset not in SUBSETS:
            raise UserError(f"{path}: {name}: subset {subset!r} not one of {', '.join(SUBSETS)}")
        if curriculum is not None and curriculum not in CURRICULA:
            raise UserError(f"{path}: {name}: curriculum {curriculum!r} not one of {', '.join(CURRICULA)}")
        label = raw.get("label") or _default_label(name, subset, curriculum)
        entries.append(Entry(name, label, args, subset, curriculum))
    names = [e.name for e in entries]
    reference = str(spec.get("reference") or names[0])
    if reference not in names:
        raise UserError(f"{path}: reference {reference!r} is not a lineup name ({', '.join(names)})")
    ref = entries[names.index(reference)]
    if ref.subset or ref.curriculum:
        raise UserError(f"{path}: the reference run {reference!r} must be plain training (no subset/curriculum)")
    name = str(spec.get("name") or path.stem)
    out = Path(spec.get("output") or Path("runs") / name)  # relative to the current directory, like any flag
    return Lineup(path, name, out, dict(spec.get("train_args") or {}), int(spec.get("seeds") or 1), reference,
                  spec.get("split"), dict(spec.get("cartography_args") or {}), entries)


def _default_label(name: str, subset: str | None, curriculum: str | None) -> str:
    if subset:
        return f"+ {DISPLAY[subset]}"
    if curriculum:
        return f"+ {DISPLAY[curriculum]}"
    return name


def flags(args: dict) -> list[str]:
    """{"batch_size": 32, "oversample": True, "test": [a, b]} -> --batch-size 32 --oversample --test a b."""
    out: list[str] = []
    for key, value in args.items():
        flag = "--" + str(key).replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, *[str(v) for v in value]]
        else:
            out += [flag, str(value)]
    return out


def train_argv(lineup: Lineup, entry: Entry) -> list[str]:
    ref_dir = lineup.out / lineup.reference
    args = {**lineup.train_args, **entry.args}
    if lineup.seeds > 1:
        args.setdefault("seeds", lineup.seeds)
    argv = ["train", *flags(args), "--output", str(lineup.out / entry.name)]
    if entry.subset:
        argv += ["--subset", entry.subset, "--cartography-from", str(ref_dir)]
    if entry.curriculum:
        argv += ["--curriculum", entry.curriculum]
        if entry.curriculum in CART_CURRICULA:
            argv += ["--cartography-from", str(ref_dir)]
        if entry.curriculum == "sts":
            argv += ["--sts-from", str(ref_dir)]
    return argv


def run_trainer(argv: list[str], log_path: Path) -> int:
    """One `python -m trainer ...` in a child process (fresh memory, its own log)."""
    cmd = [sys.executable, "-m", "trainer", *argv]
    print("$ " + " ".join(shlex.quote(c) for c in ["python", "-m", "trainer", *argv]), flush=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log_path.read_text().strip().splitlines()[-3:]
        print(f"  failed ({proc.returncode}); see {log_path}: " + " / ".join(tail), flush=True)
    return proc.returncode


# --------------------------------------------------------------------------- results


def _split_of(metrics: dict, wanted: str | None, where: Path) -> str:
    keys = [k for k, v in metrics.items() if isinstance(v, dict) and "macro_f1" in v]
    if wanted:
        if wanted not in keys:
            raise UserError(f"{where}: no split {wanted!r} in metrics.json (has {', '.join(keys)})")
        return wanted
    if "test" in keys:
        return "test"
    rest = [k for k in keys if k != "validation"]
    return (rest or keys)[0]


def collect(lineup: Lineup) -> dict:
    """Scores of every finished run: the selected seed's test metrics, mean +- std over seeds."""
    rows: list[dict[str, Any]] = []
    labels: list[str] = []
    ref_preds = None
    for entry in lineup.entries:
        run_dir = lineup.out / entry.name
        mpath = run_dir / "metrics.json"
        if not mpath.exists():
            rows.append({"name": entry.name, "label": entry.label, "oversample": entry.oversampled, "missing": True})
            continue
        metrics = json.loads(mpath.read_text())
        split = _split_of(metrics, lineup.split, mpath)
        m = metrics[split]
        labels = labels or list(m["per_class"])
        row = {"name": entry.name, "label": entry.label, "oversample": entry.oversampled, "split": split,
               "micro_f1": m["micro_f1"], "macro_f1": m["macro_f1"], "accuracy": m.get("accuracy"),
               "per_class": m["per_class"]}
        seeds_path = run_dir / "seeds.json"
        if seeds_path.exists():
            seeds = json.loads(seeds_path.read_text())
            runs = seeds.get("runs", {})
            row["seed_macro_f1"] = [r[split]["macro_f1"] for r in runs.values() if split in r]
            row["seed_micro_f1"] = [r[split]["micro_f1"] for r in runs.values() if split in r]
            row["selected_seed"] = seeds.get("selected_seed")
        try:
            preds, _ = load_predictions(run_dir, split)
            if entry.name == lineup.reference:
                ref_preds = preds
            row["_preds"] = preds
        except Exception:  # noqa: BLE001 - p-values are optional in the table
            pass
        rows.append(row)
    for row in rows:  # Cochran's Q of every run against the reference (RoNLI §5 "Statistical testing")
        preds = row.pop("_preds", None)
        if ref_preds is not None and preds is not None and row["name"] != lineup.reference \
                and set(preds.index) == set(ref_preds.index):
            p = preds.loc[ref_preds.index]
            x = np.column_stack([(ref_preds["pred"] == ref_preds["gold"]).to_numpy(),
                                 (p["pred"] == p["gold"]).to_numpy()])
            row["cochran_p"] = cochrans_q(x).pvalue
    return {"name": lineup.name, "reference": lineup.reference, "seeds": lineup.seeds, "labels": labels,
            "rows": rows}


def _mean_std(values: list[float]) -> str:
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


def _p(p) -> str:
    if p is None:
        return ""
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def results_markdown(results: dict, *, title: str = "", train_args: dict | None = None) -> str:
    labels = results["labels"]
    rows = results["rows"]
    seeds = results["seeds"]
    ok = [r for r in rows if not r.get("missing")]
    best_micro = max((r["micro_f1"] for r in ok), default=None)
    best_macro = max((r["macro_f1"] for r in ok), default=None)

    def bold(v, best):
        return f"**{v:.3f}**" if best is not None and abs(v - best) < 1e-12 else f"{v:.3f}"

    out = [f"## {title or results['name']}", ""]
    split = next((r["split"] for r in ok), "test")
    out.append(f"Scores on `{split}` of the run selected on validation among {seeds} seed(s) "
               f"(RoNLI protocol); mean ± std (ddof=1) of macro-F1 over the seeds; Cochran's Q p-value of "
               f"each run against `{results['reference']}` on the same examples. Best in bold.")
    out.append("")
    out.append("Overall (layout of RoNLI Table 5):")
    out.append("")
    out.append("| Method | Over-sampling | Micro F1 | Macro F1 | Macro F1 over seeds | p vs reference |")
    out.append("|---|:-:|--:|--:|--:|--:|")
    for r in rows:
        over = "✓" if r["oversample"] else "✗"
        if r.get("missing"):
            out.append(f"| {r['label']} | {over} | (not run) | | | |")
            continue
        out.append(f"| {r['label']} | {over} | {bold(r['micro_f1'], best_micro)} | {bold(r['macro_f1'], best_macro)} "
                   f"| {_mean_std(r.get('seed_macro_f1', []))} | {_p(r.get('cochran_p'))} |")
    out.append("")
    out.append("Per class (layout of RoNLI Table 4):")
    out.append("")
    head = "| Method | Over-sampling | " + " | ".join(f"{lab} P | {lab} R | {lab} F1" for lab in labels) + " |"
    out.append(head)
    out.append("|---|:-:|" + "--:|" * (3 * len(labels)))
    for r in ok:
        cells = []
        for lab in labels:
            pc = r["per_class"].get(lab, {})
            cells += [f"{pc.get('precision', 0):.2f}", f"{pc.get('recall', 0):.2f}", f"{pc.get('f1', 0):.2f}"]
        out.append(f"| {r['label']} | {'✓' if r['oversample'] else '✗'} | " + " | ".join(cells) + " |")
    if train_args:
        out += ["", "Common `train` flags: `" + " ".join(flags(train_args)) + "`"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- CLI
