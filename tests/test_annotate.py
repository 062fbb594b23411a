"""`python -m trainer annotate`: textbook agreement values, blind batches, rounds, bad input,
validated split, κ per cartography group. The real Label Studio round trip is in
tests/test_label_studio.py."""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import shared_file
from trainer.cli import main

pytest.importorskip("statsmodels")
pytest.importorskip("krippendorff")
pytest.importorskip("sklearn")

from trainer.annotation import agreement as ag  # noqa: E402
from trainer.annotation.blind_batches import _allocate_balanced, _allocate_natural, select_items  # noqa: E402
from trainer.annotation.guidelines import fold  # noqa: E402
from trainer.annotation.simulate import simulate_label  # noqa: E402

LABELS = ("contrasting", "entailment", "reasoning", "neutral")


def long_table(rows: list[list], labels=None, missing=None) -> pd.DataFrame:
    """Items x raters matrix -> the long annotation table (item_id, annotator, label, round)."""
    out = []
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if v is missing or (isinstance(v, float) and np.isnan(v)):
                continue
            out.append((f"i{i}", f"r{j}", labels[v] if labels else str(v), 1))
    return pd.DataFrame(out, columns=["item_id", "annotator", "label", "round"])


# --------------------------------------------------------------------------- textbook values

# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (as in statsmodels'
# tests, `diagnoses`). Fleiss reports kappa = .430.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]
DIAGNOSES = ("depression", "personality disorder", "schizophrenia", "neurosis", "other")

# Wikipedia's Fleiss example (statsmodels' test_fleiss_kappa): 10 subjects, 14 raters, 5
# categories, counts per category; kappa = 0.210.
WIKIPEDIA_FLEISS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example with
# missing values: 4 observers, 12 units; alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_fleiss_1971_table_gives_kappa_0430():
    ann = long_table([[v - 1 for v in row] for row in FLEISS_1971], DIAGNOSES)
    res = ag.fleiss(ann, DIAGNOSES)
    assert res["kappa"] == pytest.approx(0.430, abs=5e-4)
    assert (res["items"], res["raters_per_item"], res["items_left_out"]) == (30, 6, 0)


def test_wikipedia_fleiss_example_gives_0210():
    cats = tuple("abcde")
    rows = [[k for k, n in enumerate(counts) for _ in range(n)] for counts in WIKIPEDIA_FLEISS]
    assert ag.fleiss(long_table(rows, cats), cats)["kappa"] == pytest.approx(0.210, abs=5e-4)


def test_fleiss_uses_items_with_the_common_number_of_labels():
    cats = tuple("abcde")
    rows = [[k for k, n in enumerate(counts) for _ in range(n)] for counts in WIKIPEDIA_FLEISS]
    ann = long_table(rows, cats)
    extra = pd.DataFrame([("x", "r0", "a", 1), ("x", "r1", "b", 1)], columns=ann.columns)  # 2 labels only
    res = ag.fleiss(pd.concat([ann, extra]), cats)
    assert res["kappa"] == pytest.approx(0.210, abs=5e-4) and res["items_left_out"] == 1


def test_cohen_wikipedia_example_gives_0400():
    # Wikipedia (Cohen's kappa): 50 grant proposals, both yes 20, A yes/B no 5, A no/B yes 10,
    # both no 15: p_o = 0.70, p_e = 0.50, kappa = 0.40.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert ag.cohen(a, b, ("yes", "no")) == pytest.approx(0.40, abs=1e-12)
    ann = long_table([[x, y] for x, y in zip(a, b)])
    (pair,) = ag.cohen_pairwise(ann, ("yes", "no"))
    assert pair["kappa"] == pytest.approx(0.40) and pair["observed_agreement"] == pytest.approx(0.70)
    assert pair["items"] == 50


def test_cohen_three_categories_matches_sas_value_in_statsmodels_docs():
    # statsmodels' cohens_kappa test: table [[0,4,1],[0,8,0],[0,1,5]], SAS kappa 0.4842.
    table = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
    a, b = [], []
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            a += [f"c{i}"] * n
            b += [f"c{j}"] * n
    assert ag.cohen(a, b, ("c0", "c1", "c2")) == pytest.approx(0.4842, abs=5e-5)


def test_krippendorff_2011_example_gives_0743():
    ann = long_table(KRIPPENDORFF_2011, None, None)  # observers as rows: transpose below
    ann = ann.rename(columns={"item_id": "annotator", "annotator": "item_id"})
    cats = ("1", "2", "3", "4", "5")
    res = ag.krippendorff_alpha(ann, cats)
    assert res["alpha"] == pytest.approx(0.743, abs=5e-4)
    assert res["pairable_items"] == 11  # unit 12 has a single value


def test_undefined_kappas_are_none_not_numbers():
    same = long_table([[0, 0], [0, 0], [0, 0]], LABELS)
    assert ag.fleiss(same, LABELS)["kappa"] is None
    assert ag.cohen(["neutral"] * 3, ["neutral"] * 3, LABELS) is None
    assert ag.krippendorff_alpha(same, LABELS)["alpha"] is None


# --------------------------------------------------------------------------- majority


def test_majority_rules_and_statuses():
    votes = {"a": ["neutral", "neutral", "reasoning"], "b": ["neutral", "reasoning", "entailment"],
             "c": ["neutral", "neutral", "reasoning", "reasoning"], "d": ["neutral"],
             "e": ["entailment", "entailment", "entailment", "neutral"]}
    ann = pd.DataFrame([(i, f"r{k}", l, 1) for i, ls in votes.items() for k, l in enumerate(ls)],
                       columns=["item_id", "annotator", "label", "round"])
    m = ag.majority(ag.vote_counts(ann, LABELS, [*votes, "f"]), min_votes=2)
    assert m["status"].to_dict() == {"a": "majority", "b": "no_majority", "c": "no_majority", "d": "too_few_votes",
                                     "e": "majority", "f": "unlabelled"}
    assert m.loc["a", "majority"] == "neutral" and m.loc["e", "majority"] == "entailment"
    assert m["majority"].isna().tolist() == [False, True, True, True, False, True]
    assert ag.majority(ag.vote_counts(ann, LABELS), min_votes=1).loc["d", "status"] == "majority"


# --------------------------------------------------------------------------- data


RO = {
    "contrasting": ("Orașul a crescut rapid după război.", "Satele din jur s-au depopulat în aceeași perioadă."),
    "entailment": ("Delta are o faună foarte bogată.", "Acolo trăiesc peste 300 de specii de păsări."),
    "reasoning": ("Apele lacului au devenit foarte poluate.", "Pescuitul a fost interzis timp de cinci ani."),
    "neutral": ("Biserica a fost ridicată în secolul al XV-lea.", "Echipa locală a câștigat campionatul în 1998."),
}
MARKERS = {"contrasting": "În contrast", "entailment": "Cu alte cuvinte", "reasoning": "Prin urmare", "neutral": None}


def make_splits(folder: Path, n_test: int = 40, n_val: int = 12) -> Path:
    """Our splits layout (train/ validation/ test/ Parquet) with the DESIGN.md columns."""
    for split, n in (("train", 8), ("validation", n_val), ("test", n_test)):
        rows = []
        for i in range(n):
            label = LABELS[i % 4]
            p, h = RO[label]
            rows.append({"pair_id": f"{split[:2]}{i:03d}", "corpus": "ro-test", "genre": "wikipedia" if i % 3 else "news",
                         "lang": "ro", "doc_id": f"doc{i // 2}", "premise": f"{p} ({split} {i})", "hypothesis": h,
                         "label": label, "marker": MARKERS[label],
                         "source": "marker" if MARKERS[label] else "second_random"})
        (folder / split).mkdir(parents=True)
        pd.DataFrame(rows).to_parquet(folder / split / "part-00000.parquet", index=False)
    return folder


@pytest.fixture()
def splits(tmp_path):
    return make_splits(tmp_path / "splits")


def read_csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def write_labels(path: Path, labels: dict[str, str], delimiter: str = ",") -> None:
    """Fill an annotator CSV the way a person would (keeping the other cells)."""
    rows = read_csv_rows(path)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\n")
    w.writeheader()
    for r in rows:
        r["label"] = labels.get(r["item_id"], "")
        w.writerow(r)
    path.write_text(buf.getvalue(), encoding="utf-8")


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def auto_labels(splits_dir: Path) -> dict[str, str]:
    frames = [pd.read_parquet(p) for p in splits_dir.glob("*/*.parquet")]
    df = pd.concat(frames)
    return dict(zip(df["pair_id"], df["label"]))


# --------------------------------------------------------------------------- export


def test_allocations():
    assert _allocate_balanced({"a": 10, "b": 10, "c": 10, "d": 10}, 10) == {"a": 3, "b": 3, "c": 2, "d": 2}
    assert _allocate_balanced({"a": 1, "b": 10, "c": 10, "d": 10}, 12) == {"a": 1, "b": 4, "c": 4, "d": 3}
    assert _allocate_natural({"a": 60, "b": 30, "c": 10}, 7) == {"a": 4, "b": 2, "c": 1}
    assert sum(_allocate_natural({"a": 5, "b": 5, "c": 5}, 10).values()) == 10


def test_selection_is_seeded_and_independent_of_row_order():
    df = pd.DataFrame({"pair_id": [f"x{i}" for i in range(200)], "premise": "p", "hypothesis": "h",
                       "label": [LABELS[i % 4] if i < 160 else "neutral" for i in range(200)]})
    a, info = select_items(df, 20, "balanced", 7, LABELS)
    b, _ = select_items(df.sample(frac=1, random_state=3), 20, "balanced", 7, LABELS)
    c, _ = select_items(df, 20, "balanced", 8, LABELS)
    assert a["pair_id"].tolist() == b["pair_id"].tolist() and set(a["pair_id"]) != set(c["pair_id"])
    assert info["label_counts"] == {l: 5 for l in LABELS}
    nat, info = select_items(df, 20, "natural", 7, LABELS)
    assert info["label_counts"] == {"neutral": 8, "contrasting": 4, "entailment": 4, "reasoning": 4}


def test_export_is_blind_seeded_and_in_romanian(splits, tmp_path, capsys):
    out = tmp_path / "batch"
    code, stdout, err = run_cli(["annotate", "export", "--data", splits, "--split", "validation,test",
                                 "--n", "24", "--seed", "5", "--annotators", "ana,bogdan", "--annotators", "carmen",
                                 "--output", out], capsys)
    assert code == 0, err
    assert "batch of 24 items" in stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["annotators"] == ["ana", "bogdan", "carmen"] and manifest["lang"] == "ro"
    assert manifest["selection"]["label_counts"] == {l: 6 for l in LABELS}
    ids = {it["item_id"] for it in manifest["items"]}
    orders = []
    for name in ("ana", "bogdan", "carmen"):
        text = (out / "annotators" / f"round1-{name}.csv").read_text(encoding="utf-8-sig")
        rows = read_csv_rows(out / "annotators" / f"round1-{name}.csv")
        assert list(rows[0]) == ["item_id", "premise", "hypothesis", "label"]
        assert {r["item_id"] for r in rows} == ids and all(r["label"] == "" for r in rows)
        for secret in ("În contrast", "Cu alte cuvinte", "Prin urmare", "second_random", "marker", "doc"):
            assert secret not in text  # no marker, source or document shown
        for label in LABELS:
            assert f",{label}" not in text
        orders.append([r["item_id"] for r in rows])
    assert orders[0] != orders[1] != orders[2]  # each annotator has an order of their own
    tasks = json.loads((out / "label_studio" / "tasks.json").read_text())
    assert len(tasks) == 24 and all(set(t["data"]) == {"item_id", "premise", "hypothesis", "round"} for t in tasks)
    config = ET.fromstring((out / "label_studio" / "config.xml").read_text())
    choices = config.find("Choices")
    assert choices.get("toName") == "hypothesis" and choices.get("choice") == "single-radio"
    assert [c.get("alias") for c in choices] == list(LABELS)
    assert [c.get("value") for c in choices] == ["Contrast", "Implicație", "Raționament", "Neutru"]
    assert "dezvoltă sau precizează" in choices[1].get("hint")
    assert "Propoziția A" in (out / "instructions.md").read_text()
    # same data and seed -> byte-identical files
    code, _, _ = run_cli(["annotate", "export", "--data", splits, "--split", "validation,test", "--n", "24",
                          "--seed", "5", "--annotators", "ana,bogdan,carmen", "--output", tmp_path / "again"], capsys)
    assert code == 0
    for rel in ("annotators/round1-ana.csv", "label_studio/tasks.json", "label_studio/config.xml"):
        assert (out / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes()
    code, _, err = run_cli(["annotate", "export", "--data", splits, "--output", out], capsys)
    assert code == 2 and err.count("\n") == 1 and "already exists" in err and "--overwrite" in err


def test_export_of_a_file_without_pair_id_uses_the_loaders_id(tmp_path, capsys):
    dev = pd.read_json(shared_file("nli/scinli-dev.jsonl"), lines=True).drop(columns=["id"]).groupby("label").head(20)
    data = tmp_path / "scinli.jsonl"
    dev.to_json(data, orient="records", lines=True)
    code, out, err = run_cli(["annotate", "export", "--data", data, "--premise", "sentence1", "--hypothesis",
                              "sentence2", "--n", "8", "--sample", "natural", "--output", tmp_path / "b"], capsys)
    assert code == 0, err
    rows = read_csv_rows(tmp_path / "b" / "annotators" / "round1-annotator1.csv")
    assert len(rows) == 8 and all(len(r["item_id"]) == 16 for r in rows)  # stable hash ids of the loader
    assert "The relation between two sentences" in (tmp_path / "b" / "label_studio" / "config.xml").read_text()
    from trainer.data.loading import load_nli

    loaded = load_nli(data, premise="sentence1", hypothesis="sentence2")["data"]
    auto = dict(zip(loaded["pair_id"], loaded["label"]))
    for name in ("annotator1", "annotator2", "annotator3"):
        path = tmp_path / "b" / "annotators" / f"round1-{name}.csv"
        write_labels(path, {r["item_id"]: auto[r["item_id"]] for r in rows})
    code, out, err = run_cli(["annotate", "import", *sorted((tmp_path / "b" / "annotators").glob("*.csv")),
                              "--data", data, "--premise", "sentence1", "--hypothesis", "sentence2",
                              "--output", tmp_path / "imp"], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "imp" / "agreement.json").read_text())
    assert summary["fleiss_kappa"] == pytest.approx(1.0) and summary["cohen_kappa_auto_vs_majority"] == pytest.approx(1.0)


# --------------------------------------------------------------------------- import


def label_batch(out: Path, plan: dict[str, callable], auto: dict[str, str]) -> None:
    for name, rule in plan.items():
        path = next((out / "annotators").glob(f"round*-{name}.csv"))
        ids = [r["item_id"] for r in read_csv_rows(path)]
        write_labels(path, {i: rule(i, auto[i]) for i in ids if rule(i, auto[i]) is not None})


def shift(label: str, k: int = 1) -> str:
    return LABELS[(LABELS.index(label) + k) % 4]


def test_known_disagreement_round_trip(splits, tmp_path, capsys):
    """Three annotators with a planned disagreement on 40 test items:

    - ana always gives the automatic label;
    - bogdan shifts it by one on items 0, 5, 10, ... (8 items);
    - carmen shifts it by one on items 0, 4, 8, ... (10 items).
    Items 0, 20 (both shift the same way) get a majority different from the automatic label;
    every other item keeps the automatic label as majority.
    """
    out = tmp_path / "r1"
    assert run_cli(["annotate", "export", "--data", splits, "--annotators", "ana,bogdan,carmen", "--output", out],
                   capsys)[0] == 0
    auto = auto_labels(splits)
    num = lambda i: int(i[2:])  # noqa: E731
    label_batch(out, {"ana": lambda i, a: a,
                      "bogdan": lambda i, a: shift(a) if num(i) % 5 == 0 else a,
                      "carmen": lambda i, a: shift(a) if num(i) % 4 == 0 else a}, auto)
    code, stdout, err = run_cli(["annotate", "import", *sorted((out / "annotators").glob("*.csv")),
                                 "--data", splits, "--output", tmp_path / "imp"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "imp" / "agreement.json").read_text())
    assert s["splits"] == ["test"]  # from the batch manifest
    assert s["counts"]["items_in_batch"] == 40 and s["counts"]["with_majority"] == 40
    # automatic vs majority: 38 of 40 agree; items 0 (contrasting->entailment) and 20 (contrasting->entailment)
    cm = np.array(s["auto_vs_majority"]["confusion_matrix"]["counts"])
    assert cm.trace() == 38 and cm[1, 0] == 2  # rows human, columns automatic
    po, pe = 38 / 40, (8 * 10 + 12 * 10 + 10 * 10 + 10 * 10) / 40 ** 2  # human row sums 8,12,10,10; auto 10 each
    assert s["cohen_kappa_auto_vs_majority"] == pytest.approx((po - pe) / (1 - pe))
    assert s["per_class"]["contrasting"]["precision"] == pytest.approx(8 / 10)
    assert s["per_class"]["contrasting"]["recall"] == pytest.approx(1.0)
    assert s["per_class"]["entailment"]["recall"] == pytest.approx(10 / 12)
    pairs = {(p["a"], p["b"]): p for p in s["cohen_pairwise"]}
    assert pairs[("ana", "bogdan")]["observed_agreement"] == pytest.approx(32 / 40)
    assert pairs[("ana", "carmen")]["observed_agreement"] == pytest.approx(30 / 40)
    # bogdan and carmen differ where exactly one of them shifts: 8 + 10 - 2 * 2 = 14 items
    assert pairs[("bogdan", "carmen")]["observed_agreement"] == pytest.approx(26 / 40)
    # Fleiss by hand: P_i = 1 on the 24 unanimous items, 1/3 on the 16 items split 2-1
    p_bar = (24 * 1 + 16 / 3) / 40
    totals = pd.Series([auto[i] for i in auto if i.startswith("te")]).value_counts()
    shifts = [shift(auto[f"te{k:03d}"]) for k in range(40) if k % 5 == 0] + \
             [shift(auto[f"te{k:03d}"]) for k in range(40) if k % 4 == 0]
    marg = {l: 3 * totals[l] for l in LABELS}
    for k in range(40):
        for step in (5, 4):
            if k % step == 0:
                marg[auto[f"te{k:03d}"]] -= 1
    for l in shifts:
        marg[l] += 1
    pe_f = sum((v / 120) ** 2 for v in marg.values())
    assert s["fleiss_kappa"] == pytest.approx((p_bar - pe_f) / (1 - pe_f))
    ann_rows = {r["annotator"]: r for r in s["annotators_table"]}
    assert ann_rows["ana"]["equals_automatic"] == 1.0 and ann_rows["bogdan"]["equals_automatic"] == 32 / 40
    assert s["consensus"]["majority_equals_automatic"] == pytest.approx(38 / 40)
    report = (tmp_path / "imp" / "report.md").read_text()
    assert "Fleiss' κ: **" in report and "| ana | bogdan | 40 | 0.800 |" in report
    assert (tmp_path / "imp" / "confusion_matrix.png").stat().st_size > 10_000


def test_policies_and_validated_split_loads_with_datasets(splits, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "r1"
    assert run_cli(["annotate", "export", "--data", splits, "--split", "validation", "--split", "test", "--output", out],
                   capsys)[0] == 0
    auto = auto_labels(splits)
    num = lambda i: int(i[2:])  # noqa: E731
    # items 0,3,6,...: all three say neutral; items 1,7,13,...: three different labels
    label_batch(out, {
        "annotator1": lambda i, a: "neutral" if num(i) % 3 == 0 else a,
        "annotator2": lambda i, a: "neutral" if num(i) % 3 == 0 else (shift(a) if num(i) % 6 == 1 else a),
        "annotator3": lambda i, a: "neutral" if num(i) % 3 == 0 else (shift(a, 2) if num(i) % 6 == 1 else a),
    }, auto)
    files = sorted((out / "annotators").glob("*.csv"))
    results = {}
    for policy in ("majority", "agree"):
        code, stdout, err = run_cli(["annotate", "import", *files, "--data", splits, "--policy", policy,
                                     "--output", tmp_path / policy], capsys)
        assert code == 0, err
        results[policy] = json.loads((tmp_path / policy / "agreement.json").read_text())
    ids = [i for i in auto if i.startswith(("va", "te"))]
    no_major = [i for i in ids if num(i) % 6 == 1]
    neutral_changed = [i for i in ids if num(i) % 3 == 0 and auto[i] != "neutral"]
    m, a = results["majority"]["counts"], results["agree"]["counts"]
    assert m["without_majority"] == len(no_major) and m["kept"] == len(ids) - len(no_major)
    assert a["kept"] == len(ids) - len(no_major) - len(neutral_changed)
    d = datasets.load_dataset(str(tmp_path / "majority" / "validated"))
    assert set(d) == {"validation", "test"}
    assert d["test"].num_rows + d["validation"].num_rows == m["kept"]
    row = d["test"].to_pandas().set_index("pair_id")
    changed = row.loc[[i for i in neutral_changed if i in row.index]]
    assert (changed["label"] == "neutral").all() and (changed["auto_label"] != "neutral").all()
    assert {"marker", "source", "genre", "human_votes", "human_agreement"} <= set(row.columns)
    agree = datasets.load_dataset(str(tmp_path / "agree" / "validated"))
    assert all((s.to_pandas()["label"] == s.to_pandas()["auto_label"]).all() for s in agree.values())
    card = (tmp_path / "majority" / "human_validation.md").read_text()
    assert card.startswith("## Human validation") and f"{m['kept']} pairs kept" in card
    unresolved = pd.read_csv(tmp_path / "majority" / "unresolved.csv")
    assert sorted(unresolved["item_id"]) == sorted(no_major)


def test_second_round_only_for_unresolved_items_and_rounds_merge(splits, tmp_path, capsys):
    auto = auto_labels(splits)
    num = lambda i: int(i[2:])  # noqa: E731
    r1 = tmp_path / "r1"
    assert run_cli(["annotate", "export", "--data", splits, "--output", r1], capsys)[0] == 0
    # items 2, 10, 18, ...: 1-1-1 split; item 3: two annotators skip it (too few votes)
    label_batch(r1, {
        "annotator1": lambda i, a: a,
        "annotator2": lambda i, a: None if num(i) == 3 else (shift(a) if num(i) % 8 == 2 else a),
        "annotator3": lambda i, a: None if num(i) == 3 else (shift(a, 2) if num(i) % 8 == 2 else a),
    }, auto)
    code, _, err = run_cli(["annotate", "import", *sorted((r1 / "annotators").glob("*.csv")), "--data", splits,
                            "--output", tmp_path / "imp1"], capsys)
    assert code == 0, err
    s1 = json.loads((tmp_path / "imp1" / "agreement.json").read_text())
    pending = sorted([f"te{k:03d}" for k in range(40) if k % 8 == 2] + ["te003"])
    assert s1["counts"]["without_majority"] == 5 and s1["counts"]["too_few_votes"] == 1
    assert s1["counts"]["empty_labels"] == 2
    r2 = tmp_path / "r2"
    code, stdout, err = run_cli(["annotate", "export", "--data", splits, "--unresolved", tmp_path / "imp1",
                                 "--annotators", "2", "--output", r2], capsys)
    assert code == 0, err
    m2 = json.loads((r2 / "manifest.json").read_text())
    assert m2["round"] == 2 and m2["annotators"] == ["annotator4", "annotator5"]
    assert sorted(it["item_id"] for it in m2["items"]) == pending
    label_batch(r2, {"annotator4": lambda i, a: a, "annotator5": lambda i, a: a}, auto)
    files = sorted((r1 / "annotators").glob("*.csv")) + sorted((r2 / "annotators").glob("*.csv"))
    groups = ["--annotator-group", "first=annotator1,annotator2,annotator3", "--annotator-group",
              "second=annotator4,annotator5"]
    code, stdout, err = run_cli(["annotate", "import", *files, "--data", splits, *groups, "--output", tmp_path / "imp2"],
                                capsys)
    assert code == 0, err
    s2 = json.loads((tmp_path / "imp2" / "agreement.json").read_text())
    first, second = s2["by_annotator_group"]["groups"]
    assert (first["items_labelled"], first["with_majority"]) == (40, pytest.approx(34 / 40))
    assert (second["items_labelled"], second["with_majority"], second["fleiss_kappa"]) == (6, 1.0, pytest.approx(1.0))
    assert s2["by_annotator_group"]["between_majorities"][0]["items"] == 0  # round 2 only saw round 1's open items
    code, _, err = run_cli(["annotate", "import", *files, "--data", splits, "--annotator-group", "x=annotator9",
                            "--output", tmp_path / "bad"], capsys)
    _one_line_error(code, err)
    assert "annotator 'annotator9' labelled nothing" in err
    assert s2["counts"]["with_majority"] == 40 and s2["counts"]["annotations"] == 40 * 3 - 2 + 2 * 6
    rounds = {r["round"]: r for r in s2["rounds"]}
    assert rounds[1]["cumulative_with_majority"] == 34 and rounds[2]["cumulative_with_majority"] == 40
    assert rounds[2]["items"] == 6 and rounds[2]["annotators"] == ["annotator4", "annotator5"]
    assert s2["fleiss_round"] == 1 and s2["fleiss"]["items"] == 39  # round-1 items with 3 labels
    items = pd.read_parquet(tmp_path / "imp2" / "items.parquet").set_index("item_id")
    assert items.loc["te002", "rounds"] == "1,2" and items.loc["te002", "n_votes"] == 5


# --------------------------------------------------------------------------- bad input


@pytest.fixture()
def batch(splits, tmp_path, capsys):
    out = tmp_path / "b"
    assert run_cli(["annotate", "export", "--data", splits, "--n", "8", "--output", out], capsys)[0] == 0
    auto = auto_labels(splits)
    label_batch(out, {n: (lambda i, a: a) for n in ("annotator1", "annotator2", "annotator3")}, auto)
    return out, sorted((out / "annotators").glob("*.csv")), auto


def _one_line_error(code, err):
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err


def test_label_outside_the_set_is_an_error_with_file_and_line(batch, splits, tmp_path, capsys):
    out, files, auto = batch
    rows = read_csv_rows(files[1])
    write_labels(files[1], {r["item_id"]: (r["label"] if k != 4 else "contradiction") for k, r in enumerate(rows)})
    code, _, err = run_cli(["annotate", "import", *files, "--data", splits, "--output", tmp_path / "x"], capsys)
    _one_line_error(code, err)
    assert f"{files[1]} line 6: label 'contradiction' is not one of contrasting, entailment" in err
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_localized_names_semicolons_and_empty_cells_are_accepted(batch, splits, tmp_path, capsys):
    out, files, auto = batch
    ro = {"contrasting": "contrast", "entailment": "Implicatie", "reasoning": " RAȚIONAMENT ", "neutral": "Neutru"}
    rows = read_csv_rows(files[0])
    write_labels(files[0], {r["item_id"]: ro[auto[r["item_id"]]] for r in rows[1:]}, delimiter=";")
    code, stdout, err = run_cli(["annotate", "import", *files, "--data", splits, "--output", tmp_path / "x"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    assert s["counts"]["empty_labels"] == 1 and s["counts"]["annotations"] == 23
    assert s["fleiss_kappa"] == pytest.approx(1.0) and "1 empty labels" in stdout
    assert fold("Raționament") == fold("rationament") == fold("Raţionament")


def test_unknown_item_ids_are_an_error(batch, splits, tmp_path, capsys):
    out, files, auto = batch
    text = files[2].read_text(encoding="utf-8")
    first_id = read_csv_rows(files[2])[0]["item_id"]
    files[2].write_text(text.replace(first_id, "zz999"), encoding="utf-8")
    code, _, err = run_cli(["annotate", "import", *files, "--data", splits, "--output", tmp_path / "x"], capsys)
    _one_line_error(code, err)
    assert "item 'zz999' is not in" in err and "--data" in err
    # the batch was drawn from test: the validation split alone does not hold its items
    code, _, err = run_cli(["annotate", "import", *files[:2], "--data", splits, "--split", "validation",
                            "--output", tmp_path / "y"], capsys)
    _one_line_error(code, err)


def test_an_annotator_labelling_an_item_twice(batch, splits, tmp_path, capsys):
    out, files, auto = batch
    copy = tmp_path / "resent" / files[0].name
    copy.parent.mkdir()
    copy.write_bytes(files[0].read_bytes())
    code, stdout, err = run_cli(["annotate", "import", *files, copy, "--data", splits, "--output", tmp_path / "x"], capsys)
    assert code == 0, err  # the same labels twice: counted, kept once
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    assert s["counts"]["duplicates_identical"] == 8 and s["counts"]["annotations"] == 24
    assert "(kept once)" in (tmp_path / "x" / "report.md").read_text()
    rows = read_csv_rows(copy)
    write_labels(copy, {r["item_id"]: shift(r["label"]) if k == 2 else r["label"] for k, r in enumerate(rows)})
    code, _, err = run_cli(["annotate", "import", *files, copy, "--data", splits, "--output", tmp_path / "y"], capsys)
    _one_line_error(code, err)
    assert "annotator 'annotator1' labels item" in err and str(copy) in err and "keep one of the two" in err


def test_items_nobody_labelled_are_counted(batch, splits, tmp_path, capsys):
    out, files, auto = batch
    nobody = read_csv_rows(files[0])[3]["item_id"]
    for f in files:
        write_labels(f, {r["item_id"]: r["label"] for r in read_csv_rows(f) if r["item_id"] != nobody})
    code, stdout, err = run_cli(["annotate", "import", *files[:2], "--data", splits, "--output", tmp_path / "x"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    assert s["counts"]["unlabelled"] == 1 and s["counts"]["items_in_batch"] == 8 and s["counts"]["kept"] == 7
    assert f"1 items nobody labelled: {nobody}" in stdout
    assert "items nobody labelled" in (tmp_path / "x" / "report.md").read_text()


def test_label_studio_export_formats_from_the_docs(batch, splits, tmp_path, capsys):
    """JSON (with a cancelled annotation and an expanded completed_by), JSON_MIN and CSV exports,
    in the shapes Label Studio 1.23 writes (captured from a running server)."""
    out, files, auto = batch
    tasks = json.loads((out / "label_studio" / "tasks.json").read_text())
    full = []
    for k, t in enumerate(tasks):
        a = auto[t["data"]["item_id"]]
        anns = [{"id": 10 * k + u, "completed_by": u, "was_cancelled": False,
                 "result": [{"from_name": "label", "to_name": "hypothesis", "type": "choices",
                             "value": {"choices": [a]}}]} for u in (1, 2)]
        anns.append({"id": 10 * k + 3, "completed_by": {"id": 3, "email": "carmen@example.org"}, "was_cancelled": False,
                     "result": [{"from_name": "label", "to_name": "hypothesis", "type": "choices",
                                 "value": {"choices": [shift(a) if k == 0 else a]}}]})
        anns.append({"id": 10 * k + 4, "completed_by": 4, "was_cancelled": True, "result": []})
        full.append({"id": k + 1, "data": t["data"], "annotations": anns, "predictions": []})
    (tmp_path / "export.json").write_text(json.dumps(full))
    code, stdout, err = run_cli(["annotate", "import", tmp_path / "export.json", "--data", splits,
                                 "--batch", out, "--output", tmp_path / "x"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    assert s["annotators"] == ["carmen@example.org", "ls-user-1", "ls-user-2"]
    assert s["counts"]["cancelled_label_studio"] == 8 and s["counts"]["annotations"] == 24
    assert s["counts"]["with_majority"] == 8 and s["cohen_kappa_auto_vs_majority"] == pytest.approx(1.0)
    json_min = [{"item_id": t["data"]["item_id"], "premise": t["data"]["premise"], "id": k, "annotation_id": k,
                 "label": auto[t["data"]["item_id"]], "annotator": u}
                for k, t in enumerate(tasks) for u in (1, 2)]
    (tmp_path / "min.json").write_text(json.dumps(json_min))
    ls_csv = tmp_path / "ls.csv"
    pd.DataFrame([{"annotation_id": k, "annotator": "7", "item_id": t["data"]["item_id"],
                   "label": auto[t["data"]["item_id"]], "premise": t["data"]["premise"]}
                  for k, t in enumerate(tasks)]).to_csv(ls_csv, index=False)
    code, stdout, err = run_cli(["annotate", "import", tmp_path / "min.json", ls_csv, "--data", splits,
                                 "--output", tmp_path / "y"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "y" / "agreement.json").read_text())
    assert s["annotators"] == ["ls-user-1", "ls-user-2", "ls-user-7"] and s["fleiss_kappa"] == pytest.approx(1.0)
    # a task that does not come from our tasks.json
    (tmp_path / "foreign.json").write_text(json.dumps([{"id": 1, "data": {"text": "x"}, "annotations": []}]))
    code, _, err = run_cli(["annotate", "import", tmp_path / "foreign.json", "--data", splits,
                            "--output", tmp_path / "z"], capsys)
    _one_line_error(code, err)
    assert "no data.item_id" in err


# --------------------------------------------------------------------------- cartography groups


def test_kappa_per_cartography_group(splits, tmp_path, capsys):
    """A cartography run on the validation items (RoNLI Table 12): dynamics files in the format
    `train` writes, mapped by `trainer cartography`, then agreement per E2L / A / H2L."""
    auto = auto_labels(splits)
    val = sorted(i for i in auto if i.startswith("va"))
    run = tmp_path / "run"
    (run / "dynamics").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for epoch in range(3):
        probs = [0.95 if k < 4 else (0.05 if k >= 8 else [0.2, 0.8, 0.4][epoch]) for k in range(12)]
        pd.DataFrame({"pair_id": val, "gold": [auto[i] for i in val], "gold_prob": np.array(probs) + rng.uniform(0, 0.01, 12),
                      "pred": [auto[i] for i in val], "correct": [p > 0.5 for p in probs]}).to_parquet(
            run / "dynamics" / f"epoch_{epoch}.parquet")
    assert main(["cartography", str(run)]) == 0
    capsys.readouterr()
    out = tmp_path / "b"
    assert run_cli(["annotate", "export", "--data", splits, "--split", "validation", "--output", out], capsys)[0] == 0
    num = lambda i: int(i[2:])  # noqa: E731
    # easy items (0-3): unanimous; hard items (8-11): everyone disagrees with the automatic label
    label_batch(out, {
        "annotator1": lambda i, a: a if num(i) < 8 else shift(a),
        "annotator2": lambda i, a: a if num(i) < 4 else shift(a),
        "annotator3": lambda i, a: a if num(i) < 4 else shift(a, 2),
    }, auto)
    code, stdout, err = run_cli(["annotate", "import", *sorted((out / "annotators").glob("*.csv")), "--data", splits,
                                 "--cartography", run, "--output", tmp_path / "x"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    metrics = pd.read_parquet(run / "cartography" / "metrics.parquet").set_index("pair_id")
    groups = {r["group"]: r for r in s["by_cartography_group"]}
    assert groups["E2L"]["items"] == int(metrics["e2l"].sum()) and groups["H2L"]["items"] == int(metrics["h2l"].sum())
    e2l = metrics.index[metrics["e2l"]]
    assert all(num(i) < 4 for i in e2l) and groups["E2L"]["majority_equals_automatic"] == len(e2l)
    assert all(num(i) >= 8 for i in metrics.index[metrics["h2l"]])
    assert groups["H2L"]["majority_equals_automatic"] == 0
    assert s["cartography"]["mapped"] == 12
    assert "Per cartography group (RoNLI Table 12)" in (tmp_path / "x" / "report.md").read_text()
    code, _, err = run_cli(["annotate", "import", *sorted((out / "annotators").glob("*.csv")), "--data", splits,
                            "--cartography", tmp_path / "nowhere", "--output", tmp_path / "y"], capsys)
    _one_line_error(code, err)


# --------------------------------------------------------------------------- simulation


def test_simulated_annotators_match_their_accuracy():
    ids = [f"x{i}" for i in range(4000)]
    got = [simulate_label(i, "a", "neutral", list(LABELS), 0.8, seed=1) for i in ids]
    share = sum(g == "neutral" for g in got) / len(ids)
    assert 0.78 < share < 0.82
    others = pd.Series([g for g in got if g != "neutral"]).value_counts(normalize=True)
    assert set(others.index) == {"contrasting", "entailment", "reasoning"} and others.min() > 0.28
    assert got == [simulate_label(i, "a", "neutral", list(LABELS), 0.8, seed=1) for i in ids]


def test_data_without_automatic_labels(tmp_path, capsys):
    rows = [{"premise": RO[l][0] + f" ({i})", "hypothesis": RO[l][1]} for i, l in enumerate(LABELS * 3)]
    data = tmp_path / "unlabelled.jsonl"
    pd.DataFrame(rows).to_json(data, orient="records", lines=True, force_ascii=False)
    code, _, err = run_cli(["annotate", "export", "--data", data, "--n", "6", "--lang", "ro", "--output", tmp_path / "b"],
                           capsys)
    _one_line_error(code, err)
    assert "--sample natural" in err
    code, _, err = run_cli(["annotate", "export", "--data", data, "--n", "6", "--sample", "natural", "--lang", "ro",
                            "--annotators", "2", "--output", tmp_path / "b"], capsys)
    assert code == 0, err
    files = sorted((tmp_path / "b" / "annotators").glob("*.csv"))
    for f in files:
        write_labels(f, {r["item_id"]: "neutral" for r in read_csv_rows(f)})
    code, stdout, err = run_cli(["annotate", "import", *files, "--data", data, "--output", tmp_path / "x"], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "x" / "agreement.json").read_text())
    assert s["counts"]["with_majority"] == 6 and s["cohen_kappa_auto_vs_majority"] is None
    assert s["auto_vs_majority"]["items"] == 0 and not (tmp_path / "x" / "confusion_matrix.png").exists()
    code, _, err = run_cli(["annotate", "import", *files, "--data", data, "--policy", "agree", "--output", tmp_path / "y"],
                           capsys)
    _one_line_error(code, err)
    assert "--policy agree needs the automatic labels" in err


def test_output_folder_swaps_in_on_success_and_leaves_out_alone_on_error(tmp_path):
    from trainer.flags import output_folder
    from trainer.cli import UserError

    out = tmp_path / "out"
    with output_folder(out, overwrite=False) as work:
        assert work.parent == tmp_path and work.name.startswith("out.inprogress-")
        (work / "a.txt").write_text("first")
    assert (out / "a.txt").read_text() == "first" and not work.exists()
    with pytest.raises(UserError, match="already exists"):
        with output_folder(out, overwrite=False):
            pass
    with pytest.raises(RuntimeError, match="half way"):
        with output_folder(out, overwrite=True) as work:
            (work / "a.txt").write_text("second")
            raise RuntimeError("half way")
    assert (out / "a.txt").read_text() == "first" and not work.exists()  # old output kept, work folder gone
    with output_folder(out, overwrite=True) as work:
        (work / "b.txt").write_text("second")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_manifests_of_batch_folders_and_of_the_files_folders(batch, tmp_path):
    from trainer.annotation.blind_batches import MANIFEST
    from trainer.annotation.readers import find_manifests
    from trainer.cli import UserError

    batch, files, _ = batch
    found = find_manifests(files)
    assert list(found) == [str(batch / MANIFEST)] and found[str(batch / MANIFEST)]["kind"] == "nli-annotation-batch"
    assert list(find_manifests([], [batch])) == [str(batch / MANIFEST)]
    assert find_manifests([tmp_path / "elsewhere.csv"]) == {}
    with pytest.raises(UserError, match="not a batch manifest"):
        find_manifests(files, [tmp_path])
