"""`experiment`: YAML line-up parsing, the train commands it builds, the Tables 4-5 report."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from trainer.training import lineup as ex
from trainer.cli import UserError, main

REPO = Path(__file__).resolve().parents[1]
LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def write_yaml(tmp_path, text):
    p = tmp_path / "lineup.yaml"
    p.write_text(text)
    return p


def test_example_lineup_parses_into_ronli_entries():
    lineup = ex.load_lineup(REPO / "examples" / "lineup-cbow-cpu.yaml")
    assert lineup.reference == "baseline" and lineup.seeds == 3
    by_name = {e.name: e for e in lineup.entries}
    assert [e.curriculum for e in lineup.entries if e.curriculum] == ["length", "sts", "cart", "cart++", "cart-stra++"]
    assert [e.subset for e in lineup.entries if e.subset] == ["e2l", "a", "h2l", "e2l+a"]
    assert by_name["oversampling"].oversampled and not by_name["baseline"].oversampled
    argv = ex.train_argv(lineup, by_name["cart-stra-cl-pp"])
    assert argv[0] == "train"
    assert argv[argv.index("--model") + 1] == "cbow-softmax"
    assert argv[argv.index("--premise") + 1] == "sentence1"
    assert argv[argv.index("--seeds") + 1] == "3"
    assert argv[argv.index("--curriculum") + 1] == "cart-stra++"
    assert argv[argv.index("--cartography-from") + 1] == str(lineup.out / "baseline")
    sts = ex.train_argv(lineup, by_name["sts-cl"])
    assert sts[sts.index("--sts-from") + 1] == str(lineup.out / "baseline") and "--cartography-from" not in sts
    sub = ex.train_argv(lineup, by_name["e2l-a"])
    assert sub[sub.index("--subset") + 1] == "e2l+a"
    assert "--oversample" in ex.train_argv(lineup, by_name["oversampling"])


def test_every_example_lineup_builds_valid_train_commands():
    from trainer.cli import build_parser

    for path in sorted((REPO / "examples").glob("experiment*.yaml")):
        lineup = ex.load_lineup(path)
        for entry in lineup.entries:
            argv = ex.train_argv(lineup, entry)
            args = build_parser(argv).parse_args(argv)  # the flags exist in `train`
            assert str(args.output).endswith(entry.name)


def test_flags_conversion():
    assert ex.flags({"batch_size": 32, "oversample": True, "class_weights": False, "test": ["a", "b"], "x": None}) == [
        "--batch-size", "32", "--oversample", "--test", "a", "b"]


@pytest.mark.parametrize("text,message", [
    ("lineup: []\n", "non-empty 'lineup'"),
    ("lineup: [{name: a, subset: easy}]\n", "subset 'easy' not one of"),
    ("lineup: [{name: a, curriculum: random}]\n", "curriculum 'random' not one of"),
    ("lineup: [{name: a}, {name: a}]\n", "repeated"),
    ("lineup: [{name: a, colour: red}]\n", "unknown key"),
    ("reference: z\nlineup: [{name: a}]\n", "reference 'z' is not a lineup name"),
    ("lineup: [{name: a, subset: e2l}]\n", "must be plain training"),
    ("lineup: [a\n", "not valid YAML"),
    ("seed: 3\nlineup: [a]\n", "unknown key"),
])
def test_bad_lineups_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(UserError, match=message):
        ex.load_lineup(write_yaml(tmp_path, text))


def fake_finished_run(run_dir, gold, pred, macro, seeds):
    run_dir.mkdir(parents=True)
    per_class = {lab: {"precision": 0.5, "recall": 0.4, "f1": 0.44, "support": 10} for lab in LABELS}
    m = {"validation": {"accuracy": 0.1, "micro_f1": 0.1, "macro_f1": 0.1, "per_class": per_class},
         "test": {"accuracy": macro + 0.01, "micro_f1": macro + 0.01, "macro_f1": macro, "per_class": per_class}}
    (run_dir / "metrics.json").write_text(json.dumps(m))
    (run_dir / "seeds.json").write_text(json.dumps({"selected_seed": 0, "runs": {
        str(i): {"test": {"macro_f1": s, "micro_f1": s}} for i, s in enumerate(seeds)}}))
    pd.DataFrame({"pair_id": [f"e{i}" for i in range(len(gold))], "split": "test", "gold": gold, "pred": pred}).to_parquet(
        run_dir / "predictions.parquet")


def test_report_only_builds_tables_4_and_5(tmp_path, capsys):
    y = write_yaml(tmp_path, f"""
name: toy
output: {tmp_path / 'out'}
seeds: 2
lineup:
  - {{name: baseline, label: CBOW + Softmax}}
  - {{name: over, label: CBOW + Softmax, oversample: true}}
  - {{name: cart-stra, curriculum: cart-stra++}}
""")
    gold = LABELS * 25
    fake_finished_run(tmp_path / "out" / "baseline", gold, gold[1:] + gold[:1], 0.40, [0.40, 0.38])
    fake_finished_run(tmp_path / "out" / "cart-stra", gold, gold, 0.60, [0.60, 0.58])
    assert main(["experiment", str(y), "--report-only"]) == 0
    md = (tmp_path / "out" / "results.md").read_text()
    assert "| Method | Over-sampling | Micro F1 | Macro F1 | Macro F1 over seeds | p vs reference |" in md
    assert "| CBOW + Softmax | ✗ | 0.410 | 0.400 | 0.390 ± 0.014 |  |" in md
    assert "| CBOW + Softmax | ✓ | (not run) |" in md
    row = next(line for line in md.splitlines() if line.startswith("| + Cart-Stra-CL++ | ✗ | **0.610** | **0.600**"))
    assert row.endswith("| 0.590 ± 0.014 | 1.5e-23 |")  # Cochran Q = 2(50^2 + 50^2) / 100 = 100, chi2(1) sf
    assert "contrasting P | contrasting R | contrasting F1" in md
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["rows"][0]["split"] == "test"


def test_dry_run_prints_commands_reference_first(tmp_path, capsys):
    y = write_yaml(tmp_path, f"""
output: {tmp_path / 'o'}
train_args: {{model: cbow-softmax, epochs: 2}}
lineup: [baseline, {{name: cart, curriculum: cart}}, {{name: len, curriculum: length}}]
""")
    assert main(["experiment", str(y), "--dry-run", "--only", "cart"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2  # the reference is added because cart needs its cartography
    assert "--output " + str(tmp_path / "o" / "baseline") in lines[0]
    assert "--curriculum cart --cartography-from" in lines[1]


def test_tiny_lineup_end_to_end_on_scinli(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("gensim")
    from tests.conftest import shared_file

    train = pd.read_json(shared_file("nli/scinli-train-2k-human.jsonl"), lines=True)
    dev = pd.read_json(shared_file("nli/scinli-dev.jsonl"), lines=True)
    train.groupby("label").head(40).to_json(tmp_path / "train.jsonl", orient="records", lines=True)
    dev.groupby("label").head(25).to_json(tmp_path / "dev.jsonl", orient="records", lines=True)
    y = write_yaml(tmp_path, f"""
name: tiny
output: {tmp_path / 'out'}
seeds: 1
train_args:
  train: {tmp_path / 'train.jsonl'}
  validation: {tmp_path / 'dev.jsonl'}
  test: {tmp_path / 'dev.jsonl'}
  premise: sentence1
  hypothesis: sentence2
  model: cbow-softmax
  epochs: 2
  batch_size: 16
  vector_size: 16
  no_progress: true
lineup:
  - {{name: baseline, label: CBOW + Softmax}}
  - {{name: h2l, subset: h2l}}
  - {{name: cart-stra, curriculum: cart-stra++}}
""")
    assert main(["experiment", str(y)]) == 0
    out = tmp_path / "out"
    assert (out / "baseline" / "cartography" / "metrics.parquet").exists()
    results = json.loads((out / "results.json").read_text())
    rows = {r["name"]: r for r in results["rows"]}
    assert set(rows) == {"baseline", "h2l", "cart-stra"} and not any(r.get("missing") for r in rows.values())
    assert "cochran_p" in rows["h2l"] and 0 <= rows["cart-stra"]["macro_f1"] <= 1
    h2l_cfg = json.loads((out / "h2l" / "config.json").read_text())
    assert h2l_cfg["subset"]["n"] == 53  # round(0.33 * 160)
    md = (out / "results.md").read_text()
    assert "| + H2L | ✗ |" in md and "| + Cart-Stra-CL++ | ✗ |" in md
    # a second call keeps the finished runs
    capsys.readouterr()
    assert main(["experiment", str(y)]) == 0
    assert "done already" in capsys.readouterr().out
