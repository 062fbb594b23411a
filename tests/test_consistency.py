"""Meta-inferential consistency (issue 16): the readings' derivation against the paper's tables,
inferred items, scores, and the command end to end on a small SNLI-like dataset built here."""
from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pytest

from tests import logic_formulas as formulas
from trainer.analysis import logic
from trainer.cli import UserError, main


def classify(text: str, reading: str) -> tuple[str, np.ndarray]:
    """Status of a (meta-)inference under a reading, as the paper's Table 2 writes it, and its
    truth vector: ``valid`` (✓), ``contradictory`` (⊥), ``vacuous`` (∅: the antecedent of the
    top-level implication is unsatisfiable) or ``contingent`` (equivalent to the returned vector)."""
    node = formulas.parse(text)
    truth = formulas.evaluate(node, reading)
    if node[0] == "imp" and not formulas.evaluate(node[1], reading).any():
        return "vacuous", truth
    if truth.all():
        return "valid", truth
    if not truth.any():
        return "contradictory", truth
    return "contingent", truth


def equivalent(f: str, g: str, reading: str | None = None) -> bool:
    """Whether two formulas are equivalent over K (true at the same models)."""
    return bool(np.array_equal(formulas.evaluate(f, reading), formulas.evaluate(g, reading)))

# ---------------------------------------------------------------------------- the dataset
# An SNLI-like 3-label dataset with shared premises: every premise (a photo-caption-like
# sentence) has one entailed, one neutral and one contradicting hypothesis, as SNLI has.
# Generated items (§5.2) take the entailed and neutral hypotheses as premises.

# (subject in premise, subject in hypotheses, generic subject, plural)
SUBJECTS = [
    ("A man in a blue jacket", "A man", "A person", False),
    ("A young woman with a red scarf", "A woman", "A person", False),
    ("Two boys in school uniforms", "Two boys", "Some children", True),
    ("An elderly couple", "An old man and woman", "Two people", True),
    ("A little girl in a yellow dress", "A girl", "A child", False),
    ("A group of tourists with backpacks", "Some tourists", "A group of people", True),
    ("A bearded man wearing sunglasses", "A man", "A person", False),
    ("Three construction workers in orange vests", "Three workers", "Some people", True),
    ("A teenager wearing headphones", "A teenager", "A young person", False),
    ("A woman in a green coat", "A woman", "Someone", False),
    ("Two friends in matching hats", "Two friends", "Two people", True),
    ("A tall man with a gray beard", "An old man", "A person", False),
    ("A mother and her son", "A woman and a boy", "Two people", True),
    ("A young athlete in a striped shirt", "An athlete", "A person", False),
]
# One activity per entry: the premise's verb phrase; the entailed, neutral and contradicting
# hypotheses; generated (entailment, neutral, contradiction) items on the entailed hypothesis,
# then on the neutral one. {S}: the hypotheses' subject, {G}: a generic subject, {be}: is/are,
# {x|y}: singular|plural.
ACTIVITIES = [
    ("riding {a bicycle|bicycles} along a river path",
     "{S} {be} riding {a bike|bikes}.", "{S} {be} riding to work.",
     "{S} {be} sleeping in bed.",
     ("{G} {be} outdoors.",
      "{S} {be} riding {a new bike|new bikes}.",
      "{S} {be} sitting on a sofa."),
     ("{S} {be} on the way to work.",
      "{S} {be} late for work.",
      "{S} {be} at home on vacation.")),
    ("playing {a guitar|guitars} on a busy street corner",
     "{S} {be} playing music.", "{S} {be} playing for tips.",
     "{S} {be} swimming in a pool.",
     ("{G} {be} making sounds.",
      "{S} {be} playing a famous song.",
      "{S} {be} completely silent."),
     ("{S} {be} hoping to earn money.",
      "{S} {be} saving for rent.",
      "{S} {be} playing for free in an empty room.")),
    ("reading {a newspaper|newspapers} on a park bench",
     "{S} {be} sitting outside.", "{S} {be} waiting for a friend.",
     "{S} {be} driving a truck.",
     ("{G} {be} outdoors.",
      "{S} {be} sitting in the sun.",
      "{S} {be} standing inside a store."),
     ("{S} {be} expecting someone.",
      "{S} {be} waiting for a brother.",
      "{S} {be} alone and expecting nobody.")),
    ("cooking pasta in a small kitchen",
     "{S} {be} making food.", "{S} {be} cooking dinner for the family.",
     "{S} {be} climbing a mountain.",
     ("{G} {be} preparing a meal.",
      "{S} {be} making food for a party.",
      "{S} {be} fasting and not touching food."),
     ("{S} {be} preparing an evening meal.",
      "{S} {be} cooking a birthday dinner.",
      "{S} {be} cooking breakfast alone.")),
    ("walking {a dog|dogs} through the snow",
     "{S} {be} outside with {an animal|animals}.", "{S} {be} walking the {dog|dogs} before work.",
     "{S} {be} lying on a sunny beach.",
     ("{G} {be} outdoors.",
      "{S} {be} outside with {a puppy|puppies}.",
      "{S} {be} inside with no animals."),
     ("{S} {be} out early in the day.",
      "{S} {be} walking the {dog|dogs} at dawn.",
      "{S} {be} walking the {dog|dogs} at midnight after work.")),
    ("painting a wooden fence in the backyard",
     "{S} {be} painting a fence.", "{S} {be} painting the fence white.",
     "{S} {be} watching television indoors.",
     ("{G} {be} working outside.",
      "{S} {be} painting an old fence.",
      "{S} {be} sleeping on the couch."),
     ("{S} {be} using white paint.",
      "{S} {be} painting the fence for a neighbor.",
      "{S} {be} painting the fence black.")),
    ("climbing a steep rock wall",
     "{S} {be} climbing.", "{S} {be} training for a competition.",
     "{S} {be} sitting on a couch.",
     ("{G} {be} moving.",
      "{S} {be} climbing a tall wall.",
      "{S} {be} lying still in bed."),
     ("{S} {be} practicing for an event.",
      "{S} {be} training for a national competition.",
      "{S} {be} retired from all competitions.")),
    ("selling fruit at a market stall",
     "{S} {be} selling food.", "{S} {be} selling apples to a neighbor.",
     "{S} {be} swimming in the ocean.",
     ("{G} {be} working.",
      "{S} {be} selling fresh food.",
      "{S} {be} asleep at home."),
     ("{S} {be} selling fruit to someone.",
      "{S} {be} selling apples at a good price.",
      "{S} {be} selling nothing today.")),
    ("swimming in a cold lake",
     "{S} {be} in the water.", "{S} {be} swimming for exercise.",
     "{S} {be} sitting in an office.",
     ("{G} {be} wet.",
      "{S} {be} in the water in summer.",
      "{S} {be} completely dry."),
     ("{S} {be} exercising.",
      "{S} {be} swimming to lose weight.",
      "{S} {be} swimming only to relax after a long rest.")),
    ("repairing an old car in a garage",
     "{S} {be} fixing a car.", "{S} {be} fixing the car for a customer.",
     "{S} {be} flying a kite in a field.",
     ("{G} {be} working on a vehicle.",
      "{S} {be} fixing a broken car.",
      "{S} {be} ignoring the car."),
     ("{S} {be} doing a job for someone.",
      "{S} {be} fixing the car for a rich customer.",
      "{S} {be} fixing the car as an unpaid hobby.")),
    ("waiting at a bus stop in the rain",
     "{S} {be} standing in the rain.", "{S} {be} waiting for the morning bus.",
     "{S} {be} dancing in a dry hall.",
     ("{G} {be} getting wet.",
      "{S} {be} standing in a heavy rain.",
      "{S} {be} standing in bright sunshine."),
     ("{S} {be} waiting for a bus in the morning.",
      "{S} {be} going to school on the morning bus.",
      "{S} {be} waiting for the night bus.")),
    ("jogging through a city park",
     "{S} {be} running outside.", "{S} {be} jogging to lose weight.",
     "{S} {be} sleeping in a hotel room.",
     ("{G} {be} moving quickly.",
      "{S} {be} running in the morning.",
      "{S} {be} standing still indoors."),
     ("{S} {be} trying to lose weight.",
      "{S} {be} jogging for a doctor.",
      "{S} {be} trying to gain weight.")),
]


def _number(text: str, plural: bool) -> str:
    return re.sub(r"\{([^{}|]*)\|([^{}|]*)\}", lambda m: m.group(2 if plural else 1), text)


def _fill(template: str, subject) -> str:
    _, hyp_subject, generic, plural = subject
    text = template.replace("{S}", hyp_subject).replace("{G}", generic).replace("{be}", "are" if plural else "is")
    return _number(text, plural)


def snli_like() -> dict[str, pd.DataFrame]:
    """train / validation / test: 14 subjects x 12 activities = 168 premises, 3 hypotheses each.

    Test: 70 premises (210 items); validation: 14 premises; train: 84 premises.
    """
    splits = {"train": [], "validation": [], "test": []}
    for si, subject in enumerate(SUBJECTS):
        for ai, act in enumerate(ACTIVITIES):
            be = "are" if subject[3] else "is"
            premise = f"{subject[0]} {be} {_number(act[0], subject[3])}."
            k = (si * 5 + ai) % 10
            split = "test" if k < 4 else "validation" if k == 4 else "train"  # 70 / 14 / 84 premises
            for label, template in zip(("entailment", "neutral", "contradiction"), act[1:4]):
                splits[split].append({"pair_id": f"p{si}-{ai}-{label[0]}", "premise": premise,
                                      "hypothesis": _fill(template, subject), "label": label})
    return {k: pd.DataFrame(v) for k, v in splits.items()}


def generated_items(test: pd.DataFrame) -> pd.DataFrame:
    """Hand-written 'generated' items on the test set's entailed and neutral hypotheses."""
    rows = []
    for si, subject in enumerate(SUBJECTS):
        for ai, act in enumerate(ACTIVITIES):
            for src_label, template, gen in (("entailment", act[1], act[4]), ("neutral", act[2], act[5])):
                premise = _fill(template, subject)
                if not (test["pair_id"] == f"p{si}-{ai}-{src_label[0]}").any():
                    continue
                for label, g in zip(("entailment", "neutral", "contradiction"), gen):
                    rows.append({"premise": premise, "hypothesis": _fill(g, subject), "label": label})
    return pd.DataFrame(rows).drop_duplicates(subset=["premise", "hypothesis"]).reset_index(drop=True)


def write_dataset(folder) -> dict:
    """The dataset as JSONL files (train/validation/test) plus generated.jsonl; returns the paths."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    splits = snli_like()
    paths = {}
    for name, df in splits.items():
        paths[name] = folder / f"{name}.jsonl"
        df.to_json(paths[name], orient="records", lines=True)
    paths["generated"] = folder / "generated.jsonl"
    generated_items(splits["test"]).to_json(paths["generated"], orient="records", lines=True)
    return paths


# ---------------------------------------------------------------------------- Table 2
# The paper's Table 2, typed as expected values only: ✓ valid, ⊥ contradictory, ∅ vacuous,
# otherwise the formula the meta-inference is equivalent to over K.
ALPHA = "◇(b ∨ ¬a ∧ c) ∨ □(¬a ∨ ¬c)"
BETA = "□(¬a ∨ ¬b) ∨ ◇(a ∧ ¬b ∨ c)"
GAMMA = "□(¬b ∨ ¬c) ∨ ◇(a ∨ b ∧ ¬c) ∨ ◇(a ∧ c)"
DELTA = "□(a ∨ ¬b ∨ ¬c) ∨ ◇(a ∧ (¬b ∨ c))"
EPSILON = f"({DELTA}) ∨ □(¬a ∨ c)"
TABLE_2 = [  # relation, MC, SC, EI
    ("Eaa", "✓", "✓", "◇a"),
    ("Caa", "¬a", "¬◇a", "⊥"),
    ("Naa", "⊥", "⊥", "¬◇a"),
    ("Cab → Cba", "✓", "✓", "¬◇a ∨ ◇b"),
    ("Cab → ¬Eba", "b", "◇b", "✓"),
    ("Eab → ¬Cba", "a", "◇a", "✓"),
    ("Nab → ¬Cba", "∅", "✓", "◇a ∨ ¬◇b"),
    ("Eab ∧ Ebc → Eac", "✓", "✓", "✓"),
    ("Eab ∧ Cbc → Cac", "✓", "✓", "✓"),
    ("Nab ∧ Ebc → ¬Cac", "∅", "✓", "✓"),
    ("Nab ∧ Cbc → ¬Eac", "∅", "✓", "✓"),
    ("Cab ∧ Nbc → ¬Eca", "∅", "✓", ALPHA),
    ("Eab ∧ Ebc → ¬Cca", "a", "◇a", "✓"),
    ("Eab ∧ Cbc → Cca", "✓", "✓", BETA),
    ("Eab ∧ Cbc → ¬Eca", "a ∧ ¬b ∨ c", "◇(a ∧ ¬b ∨ c)", "✓"),
    ("Nab ∧ Ebc → ¬Cca", "∅", "✓", GAMMA),
    ("Eab ∧ Cac → ¬Ebc", "a ∨ b ∧ ¬c", "◇(a ∨ b ∧ ¬c)", "✓"),
    ("Eab ∧ Cac → Cbc", "a ∨ ¬b ∨ ¬c", DELTA, EPSILON),
    ("Eab ∧ Nac → Nbc", "∅", "✓", "✓"),
    ("Nab ∧ Eac → ¬Cbc", "∅", "✓", "✓"),
    ("Nab ∧ Cac → ¬Ebc", "∅", "✓", "✓"),
]
# Two cells of the printed table are not equivalent to the meta-inference (the status,
# contingent, is right): Eab ∧ Ebc → ¬Cca is a ∨ (b ∧ ¬c) under MC and ◇(a ∨ b ∧ ¬c) under
# SC, the same shape as the row Eab ∧ Cac → ¬Ebc. Counter-model for MC: a, c false and b
# true at the actual world (Ebc false, so the meta-inference holds, while a does not).
PAPER_SLIPS = {("Eab ∧ Ebc → ¬Cca", "MC"): "a ∨ b ∧ ¬c", ("Eab ∧ Ebc → ¬Cca", "SC"): "◇(a ∨ b ∧ ¬c)"}
STATUS = {"✓": "valid", "⊥": "contradictory", "∅": "vacuous"}


def _matches(formula: str, reading: str, expected: str) -> bool:
    status, truth = classify(formula, reading)
    if expected in STATUS:
        return status == STATUS[expected]
    return status == "contingent" and np.array_equal(truth, formulas.evaluate(expected))


@pytest.mark.parametrize("row", TABLE_2, ids=[r[0] for r in TABLE_2])
def test_derivation_reproduces_table_2(row):
    formula, *cells = row
    for reading, expected in zip(logic.READINGS, cells):
        if (formula, reading) in PAPER_SLIPS:
            assert not _matches(formula, reading, expected)  # printed cell: status right, formula not
            assert classify(formula, reading)[0] == "contingent"
            assert _matches(formula, reading, PAPER_SLIPS[formula, reading])
        else:
            assert _matches(formula, reading, expected), (formula, reading, expected)


def test_section_4_properties_of_the_readings():
    # K proves E ∨ C ∨ N under both modal readings; EI is a strict trichotomy; SC lets E and C overlap
    for r in ("SC", "EI"):
        assert classify("Eab ∨ Cab ∨ Nab", r)[0] == "valid"
        assert classify("Nab → ¬Eab ∧ ¬Cab", r)[0] == "valid"
    assert classify("¬Eab ∨ ¬Cab ∨ ¬Nab", "SC")[0] == "valid"
    assert classify("Eab ∧ Cab", "SC")[0] == "contingent"  # overlap: when nothing is accessible
    tri = "Eab ∧ ¬Cab ∧ ¬Nab ∨ ¬Eab ∧ Cab ∧ ¬Nab ∨ ¬Eab ∧ ¬Cab ∧ Nab"
    assert classify(tri, "EI")[0] == "valid"
    assert classify(tri, "SC")[0] == "contingent"
    # MC: N is contradictory and E, C exhaust the space (Wang et al.'s oversight, §3.2)
    assert classify("Nab", "MC")[0] == "contradictory"
    assert classify("Eab ∨ Cab", "MC")[0] == "valid"


def test_formula_parser_precedence_and_errors():
    assert equivalent("¬a ∧ b ∨ c", "((¬a) ∧ b) ∨ c")
    assert equivalent("a -> b -> c", "a → (b → c)")
    assert equivalent("[](a -> b)", "¬◇(a ∧ ¬b)")
    assert not equivalent("□a", "a")  # K is not reflexive
    with pytest.raises(ValueError):
        formulas.evaluate("□□a")
    with pytest.raises(ValueError):
        formulas.parse("a ∧")


# ---------------------------------------------------------------------------- Table 4
# The SC and EI columns of the paper's Table 4 (and 7), typed as expected values.
TABLE_4 = [  # kind, source labels, SC, EI
    ("swap", "C", "Cba", "¬Eba"), ("swap", "E", "—", "¬Cba"), ("swap", "N", "¬Cba", "—"),
    ("chain_ac", "EE", "Eac", "Eac"), ("chain_ac", "EC", "Cac", "Cac"),
    ("chain_ac", "NE", "¬Cac", "¬Cac"), ("chain_ac", "NC", "¬Eac", "¬Eac"),
    ("chain_ca", "CN", "¬Eca", "—"), ("chain_ca", "EE", "—", "¬Cca"),
    ("chain_ca", "EC", "Cca", "¬Eca"), ("chain_ca", "NE", "¬Cca", "—"),
    ("shared", "EC", "—", "¬Ebc"), ("shared", "EN", "Nbc", "Nbc"),
    ("shared", "NE", "¬Cbc", "¬Cbc"), ("shared", "NC", "¬Ebc", "¬Ebc"),
]


@pytest.mark.parametrize("kind,letters,sc,ei", TABLE_4)
def test_allowed_sets_reproduce_table_4(kind, letters, sc, ei):
    for reading, expected in (("SC", sc), ("EI", ei)):
        allowed = logic.allowed_labels(reading, kind, tuple(letters))
        assert logic.constraint_text(reading, kind, allowed) == expected


def test_rows_the_paper_leaves_out():
    # derived constraints beyond Table 4: EI also rules out C for b, c sharing an entailing premise,
    # and E for (c, a) after Cab ∧ Ebc; MC makes every N source vacuous and never allows N
    assert logic.allowed_labels("EI", "shared", ("E", "E")) == frozenset("EN")
    assert logic.allowed_labels("SC", "shared", ("E", "E")) == frozenset("ECN")
    assert logic.allowed_labels("EI", "chain_ca", ("C", "E")) == frozenset("CN")
    assert logic.allowed_labels("MC", "swap", ("N",)) is None
    assert logic.allowed_labels("MC", "swap", ("E",)) == frozenset("EC")
    table = logic.allowed_table()
    assert len(table) == 3 + 3 * 9
    constrained = [r for r in table if r["SC_text"] not in ("—", "∅") or r["EI_text"] not in ("—", "∅")]
    assert len(constrained) == 17  # the 15 rows of Table 4 and the two above


# ---------------------------------------------------------------------------- items

def _sources(rows, origin="data"):
    return pd.DataFrame([{"sid": f"{origin}:{i}", "premise": p, "hypothesis": h, "gold": g, "origin": origin}
                         for i, (p, h, g) in enumerate(rows)])


def test_inferred_items_from_shared_premises_and_chains():
    from trainer.analysis.consistency import build_inferred, dedupe_sources

    a = "A dog runs through  a field."
    rows = [(a, "An animal is outside.", "E"), (a + " ", "A dog is asleep on a couch.", "C"),
            ("A dog runs through a field.", "The dog is chasing a ball.", "N"),
            ("An animal is outside.", "A creature is outdoors.", "E")]  # chains onto the first item
    gen = _sources([("The dog is chasing a ball.", "A dog is playing.", "E")], origin="generated")
    sources, dupes = dedupe_sources(pd.concat([_sources(rows), gen], ignore_index=True))
    assert dupes == 0
    items, counts = build_inferred(sources)
    kinds = items["kind"].value_counts().to_dict()
    assert kinds["swap"] == 4
    assert kinds["shared"] == 6  # 3 hypotheses of one premise (whitespace ignored): 3 x 2 ordered pairs
    assert kinds["chain_ac"] == kinds["chain_ca"] == 2
    assert counts["premise_groups"] == 2 and counts["premise_groups_with_2_or_more"] == 1
    chain = items[(items["kind"] == "chain_ac") & (items["c"] == "g")].iloc[0]
    assert chain["premise"] == "A dog runs through a field." and chain["hypothesis"] == "A dog is playing."
    back = items[(items["kind"] == "chain_ca") & (items["c"] == "h")].iloc[0]
    assert back["premise"] == "A creature is outdoors." and back["hypothesis"] == "A dog runs through a field."


def test_sentence_table_chains_stop_at_paragraphs_and_short_sentences():
    from trainer.analysis.consistency import sentence_chains

    sents = pd.DataFrame([
        ("ro", "d1", 0, 0, "Orașul are un port mare la Dunăre.", False),
        ("ro", "d1", 0, 1, "Prin urmare, comerțul a crescut repede.", False),
        ("ro", "d1", 0, 2, "Cu alte cuvinte, negustorii s-au îmbogățit.", False),
        ("ro", "d1", 0, 3, "Da.", True),
        ("ro", "d1", 0, 4, "Portul a fost modernizat în 1890.", False),
        ("ro", "d1", 1, 0, "Populația a scăzut după război.", False),
        ("ro", "d1", 1, 1, "Mulți locuitori au plecat la București.", False),
    ], columns=["corpus", "doc_id", "para_idx", "sent_idx", "text", "short"])
    sources, items, counts = sentence_chains(sents)
    assert counts["chains_available"] == 1 and counts["short_sentences_skipped"] == 1
    assert len(sources) == 2 and sorted(items["kind"]) == ["chain_ac", "chain_ca"]
    ac = items[items["kind"] == "chain_ac"].iloc[0]
    assert ac["premise"].startswith("Orașul") and ac["hypothesis"].startswith("Cu alte cuvinte")


def test_label_map_parsing_and_model_labels():
    from trainer.analysis.consistency import model_letters, parse_letter_map

    m = parse_letter_map(["contrasting=N", "reasoning=-", "entails=entailment"])
    assert m == {"contrasting": "N", "reasoning": "-", "entails": "E"}
    assert model_letters(["entailment", "neutral", "contradiction"], {}) == {"entailment": "E", "neutral": "N",
                                                                              "contradiction": "C"}
    with pytest.raises(UserError, match="--label-map reasoning"):
        model_letters(["contrasting", "entailment", "reasoning", "neutral"], {"contrasting": "N"})
    with pytest.raises(UserError, match="not E, C, N"):
        parse_letter_map(["contrasting=maybe"])


# ---------------------------------------------------------------------------- the command

class _LookupModel:
    """A stand-in for a saved run: labels from a table of pairs, a default label otherwise."""

    def __init__(self, table: dict, default: str, labels=("entailment", "neutral", "contradiction")):
        self.table, self.default, self.labels, self.config = table, default, list(labels), {}
        self.calls = []

    def predict_proba(self, df):
        self.calls.append(len(df))
        out = np.zeros((len(df), len(self.labels)), dtype=np.float32)
        for i, (p, h) in enumerate(zip(df["premise"], df["hypothesis"])):
            out[i, self.labels.index(self.table.get((p, h), self.default))] = 1.0
        return out


def test_command_scores_exactly_on_a_lookup_model(tmp_path, monkeypatch, capsys):
    import trainer.training.runs

    paths = write_dataset(tmp_path / "data")
    test = pd.read_json(paths["test"], lines=True)
    # gold on every data item; every swapped item called "contradiction" (consistent with SC
    # after Cab only); everything else "neutral"
    table = {(p, h): lab for p, h, lab in zip(test["premise"], test["hypothesis"], test["label"])}
    table.update({(h, p): "contradiction" for p, h in zip(test["premise"], test["hypothesis"])})
    model = _LookupModel(table, "neutral")
    monkeypatch.setattr("trainer.commands.consistency.load_run", lambda run_dir: model)
    out = tmp_path / "out"
    assert main(["consistency", str(tmp_path / "run"), "--data", str(paths["test"]), "--output", str(out),
                 "--batch-size", "100", "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    n = len(test)
    assert n == 210
    assert metrics["counts"]["items_per_kind"] == {"swap": n, "chain_ac": 0, "chain_ca": 0, "shared": 2 * n}
    assert metrics["counts"]["premise_groups"] == 70
    assert max(model.calls) <= 100  # batched
    rows = {(r["kind"], r["letters"]): r for r in metrics["views"]["filtered"]["rows"]}
    swap_c, swap_e, swap_n = rows["swap", "C"], rows["swap", "E"], rows["swap", "N"]
    assert swap_c["count"] == 70 and swap_c["C"] == 100.0
    assert swap_c["SC"] == "Cba" and swap_c["SC_ok"] == 100.0
    assert swap_c["EI"] == "¬Eba" and swap_c["EI_ok"] == 100.0
    assert swap_c["SC_chance"] == 33.3 and swap_c["EI_chance"] == 66.7  # a uniform random labeller
    assert swap_e["EI"] == "¬Cba" and swap_e["EI_ok"] == 0.0  # Eab then Cba: inconsistent under EI
    assert swap_n["SC"] == "¬Cba" and swap_n["SC_ok"] == 0.0 and swap_n["EI"] == "—"
    shared_en = rows["shared", "EN"]
    assert shared_en["SC"] == shared_en["EI"] == "Nbc" and shared_en["SC_ok"] == 100.0
    summary = metrics["views"]["filtered"]["summary"]
    assert summary["EI"]["per_kind"]["swap"]["constrained_items"] == 2 * 70
    assert summary["EI"]["per_kind"]["swap"]["score"] == 50.0
    assert summary["EI"]["per_kind"]["swap"]["chance"] == 66.7
    items = pd.read_parquet(out / "items.parquet")
    assert len(items) == 3 * n and items["filtered"].all()
    assert {"allowed_SC", "ok_EI", "prob_neutral", "source_pred"} <= set(items.columns)
    table_md = (out / "table.md").read_text()
    assert "| Eab | ba | – | 70 | 0.0 | 100.0 | 0.0 | — | — | — | — | ¬Cba | 0.0 |" in table_md
    assert "| Cab |  |  | 70 | 0.0 | 100.0 | 0.0 | Cba | 100.0 | Cba | 100.0 | ¬Eba | 100.0 |" in table_md
    assert (out / "consistency.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "inferred items: swap 210, chain_ac 0, chain_ca 0, shared 420" in printed


def test_command_with_generated_items_builds_chains(tmp_path, monkeypatch):
    import trainer.training.runs

    paths = write_dataset(tmp_path / "data")
    gen = pd.read_json(paths["generated"], lines=True)
    model = _LookupModel({(p, h): lab for p, h, lab in zip(gen["premise"], gen["hypothesis"], gen["label"])},
                         "entailment")
    monkeypatch.setattr("trainer.commands.consistency.load_run", lambda run_dir: model)
    out = tmp_path / "out"
    assert main(["consistency", "RUN", "--data", str(paths["test"]), "--generated", str(paths["generated"]),
                 "--output", str(out), "--no-progress", "--readings", "SC", "EI"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["generated_items"]["n"] == len(gen) and m["generated_items"]["accuracy"] == 1.0
    kinds = m["counts"]["items_per_kind"]
    test = pd.read_json(paths["test"], lines=True)
    links = sum(int((test["hypothesis"] == p).sum()) for p in gen["premise"])
    assert links >= len(gen)  # every generated item chains onto at least one test item
    assert kinds["chain_ac"] == kinds["chain_ca"] == links
    rows = [r for r in m["views"]["unfiltered"]["rows"] if r["kind"] == "chain_ac" and r["c"] == "g"]
    assert {r["letters"] for r in rows} >= {"EE", "EC", "EN"}
    assert "MC" not in m["views"]["unfiltered"]["summary"]


def test_source_labels_gold_groups_as_the_papers_table_7(tmp_path, monkeypatch):
    import trainer.training.runs

    paths = write_dataset(tmp_path / "data")
    model = _LookupModel({}, "neutral")  # labels every pair neutral
    monkeypatch.setattr("trainer.commands.consistency.load_run", lambda run_dir: model)
    views = {}
    for how in ("pred", "gold"):
        out = tmp_path / how
        assert main(["consistency", "RUN", "--data", str(paths["test"]), "--output", str(out), "--no-progress",
                     "--source-labels", how, "--max-items", "50"]) == 0
        views[how] = json.loads((out / "metrics.json").read_text())
    assert views["gold"]["counts"]["items_per_kind"] == {"swap": 50, "chain_ac": 0, "chain_ca": 0, "shared": 50}
    assert views["gold"]["counts"]["items_left_out_by_max_items"] == {"swap": 160, "shared": 370}
    pred_rows = {(r["kind"], r["letters"]) for r in views["pred"]["views"]["unfiltered"]["rows"]}
    gold_rows = {(r["kind"], r["letters"]): r for r in views["gold"]["views"]["unfiltered"]["rows"]}
    assert pred_rows == {("swap", "N"), ("shared", "NN")}  # the model's own labels: all N
    assert {k for k in gold_rows if k[0] == "swap"} == {("swap", "E"), ("swap", "C"), ("swap", "N")}
    assert gold_rows["swap", "C"]["SC"] == "Cba" and gold_rows["swap", "C"]["SC_ok"] == 0.0
    assert gold_rows["swap", "C"]["EI_ok"] == 100.0  # N is allowed after Cab under EI
    # the filtered view keeps only items whose sources the model got right: the neutral ones
    filtered = views["gold"]["views"]["filtered"]
    assert {r["letters"] for r in filtered["rows"]} <= {"N", "NN"}
    # the same stable sample every time
    out = tmp_path / "again"
    assert main(["consistency", "RUN", "--data", str(paths["test"]), "--output", str(out), "--no-progress",
                 "--source-labels", "gold", "--max-items", "50"]) == 0
    a = pd.read_parquet(tmp_path / "gold" / "items.parquet")
    b = pd.read_parquet(out / "items.parquet")
    assert a[["kind", "source1", "source2"]].equals(b[["kind", "source1", "source2"]])


def test_command_errors_are_one_line(tmp_path, monkeypatch, capsys):
    import trainer.training.runs

    paths = write_dataset(tmp_path / "data")
    four = _LookupModel({}, "neutral", labels=("contrasting", "entailment", "reasoning", "neutral"))
    monkeypatch.setattr("trainer.commands.consistency.load_run", lambda run_dir: four)
    assert main(["consistency", "RUN", "--data", str(paths["test"]), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: model labels ['contrasting', 'reasoning']") and "\n" not in err
    bad = tmp_path / "bad.jsonl"
    pd.DataFrame([{"premise": "A man sleeps.", "hypothesis": "A man rests.", "label": "maybe"}]).to_json(
        bad, orient="records", lines=True)
    assert main(["consistency", "RUN", "--data", str(bad), "--no-progress", "--label-map", "contrasting=N",
                 "reasoning=-"]) == 2
    assert "label 'maybe' is not an NLI relation" in capsys.readouterr().err
    assert main(["consistency", "RUN", "--no-progress"]) == 2
    assert "nothing to test" in capsys.readouterr().err


def test_command_on_our_sentence_table_with_a_label_map(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import trainer.training.runs

    text = ["Orașul are un port mare la Dunăre și o gară nouă.",
            "Cu alte cuvinte, orașul este un nod important de transport.",
            "Prin urmare, comerțul a crescut repede în anii următori.",
            "În contrast, satele din jur au rămas sărace și izolate.",
            "Mulți locuitori au plecat spre capitală după război."]
    folder = tmp_path / "sentences" / "corpus=rowiki"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"doc_id": ["d1"] * 5, "para_idx": pa.array([0] * 5, pa.int32()),
                             "sent_idx": pa.array(range(5), pa.int32()), "text": text,
                             "short": [False] * 5}), folder / "part-0.parquet")
    # consecutive pairs: entailment, reasoning, contrasting, neutral; everything else entailment
    table = {(text[0], text[1]): "entailment", (text[1], text[2]): "reasoning",
             (text[2], text[3]): "contrasting", (text[3], text[4]): "neutral"}
    model = _LookupModel(table, "entailment", labels=("contrasting", "entailment", "reasoning", "neutral"))
    monkeypatch.setattr("trainer.commands.consistency.load_run", lambda run_dir: model)
    out = tmp_path / "out"
    assert main(["consistency", "RUN", "--sentences", str(tmp_path / "sentences"), "--output", str(out),
                 "--label-map", "contrasting=N", "reasoning=-", "--no-progress"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["counts"]["sentence_table"]["chains_used"] == 3
    assert m["counts"]["items_per_kind"] == {"swap": 0, "chain_ac": 3, "chain_ca": 3, "shared": 0}
    assert m["counts"]["items_with_non_nli_source_label"] == 4  # the chains through the reasoning pair
    rows = m["views"]["unfiltered"]["rows"]
    assert [(r["kind"], r["letters"], r["count"]) for r in rows] == [("chain_ac", "NN", 1), ("chain_ca", "NN", 1)]
    assert m["label_map"] == {"contrasting": "N", "entailment": "E", "reasoning": "-", "neutral": "N"}


@pytest.mark.parametrize("model", ["tfidf-lr", "cbow-softmax", "transformer"])
def test_trained_run_end_to_end(tmp_path, model, capsys):
    """Every model family through `python -m trainer train` and the real `load_run`."""
    pytest.importorskip("sklearn")
    paths = write_dataset(tmp_path / "data")
    run_dir = tmp_path / "run"
    args = ["train", "--model", model, "--train", str(paths["train"]), "--validation", str(paths["validation"]),
            "--test", str(paths["test"]), "--output", str(run_dir)]
    if model == "cbow-softmax":
        pytest.importorskip("torch")
        pytest.importorskip("gensim")
        args += ["--epochs", "3"]
    if model == "transformer":
        pytest.importorskip("transformers")
        from tests.trainer_fixtures import TEST_DEVICE, make_tiny_bert

        train = pd.read_json(paths["train"], lines=True)
        bert = make_tiny_bert(tmp_path / "tiny-bert", train["premise"].tolist() + train["hypothesis"].tolist())
        args += ["--pretrained", str(bert), "--epochs", "1", "--batch-size", "32", "--max-length", "32",
                 "--no-progress", "--device", TEST_DEVICE]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["consistency", str(run_dir), "--data", str(paths["test"]), "--generated", str(paths["generated"]),
                 "--batch-size", "256", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    m = json.loads((run_dir / "consistency" / "metrics.json").read_text())
    assert m["counts"]["items_per_kind"]["shared"] == 420
    assert m["data_items"]["n"] == 210 and m["generated_items"]["n"] == 364
    for r in ("SC", "EI"):
        s = m["views"]["unfiltered"]["summary"][r]
        assert s["constrained_items"] > 0 and 0.0 <= s["score"] <= 100.0
    assert "| input items | item | c | count | E | C | N | MC | MC✓ | SC | SC✓ | EI | EI✓ |" in printed
    items = pd.read_parquet(run_dir / "consistency" / "items.parquet")
    assert len(items) == sum(m["counts"]["items_per_kind"].values())
    # the scores are recomputable from the items file
    swap_c = items[(items["kind"] == "swap") & (items["source_pred"] == "C")]
    row = next(r for r in m["views"]["unfiltered"]["rows"] if r["kind"] == "swap" and r["letters"] == "C") \
        if len(swap_c) else None
    if row is not None:
        assert row["count"] == len(swap_c)
        assert row["SC_ok"] == round(100.0 * float((swap_c["pred_letter"] == "C").mean()), 1)


if __name__ == "__main__":  # write the dataset for a manual run: python -m tests.test_consistency DIR
    print(write_dataset(sys.argv[1]))
