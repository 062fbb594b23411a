"""The gold sets of label quality (docs/label-quality.md): their sources, the job run over
them, the pairs a gold item refers to, and the sample the readers checked.

    .venv/bin/python benchmarks/gold_sets.py sample --lang ro --size 420 --out benchmarks/_work/gold-sheets
    .venv/bin/python benchmarks/gold_sets.py sheets --lang ro --out benchmarks/_work/gold-sheets

A gold item is a *reference* to a pair of the job's output (the corpus file under
../shared/data, `doc_id`, both sentences' refs, `pair_id`) with the readers' verdicts; the
texts are never stored here: `pairs_of` runs the job on the sources and joins its output on
the refs (`ref_key`), so every benchmark reads the texts from ../shared/data again.

`sample` is how the sets were drawn (once, before any filter was written): the job at its
default settings over the language's sources, then, in the order of a seeded hash of
`pair_id`, every phrase with at least 5 pairs in the pool 5 times (all its pairs when fewer),
every neutral strategy 5 times, then the lowest hashes of the rest up to `--size`. The
test part is fixed by another hash of `pair_id` (a third), the double-checked part by a
third hash (over a quarter): both chosen before any tuning.

`sample --round extension-2` (issue 55, item 3; drawn after the label filters were written,
before any reading of its pairs) grows the test parts: the job at its default settings over
the same sources, every pair the gold file already holds left out (by `pair_id` and by
location), then per label, in the order of `stable_hash(pair_id, EXT2_SEED)`, pairs until the
label's test part (the gold file's test pairs the default job emits with that label, plus the
new ones) reaches `EXT2_TARGET` (all the pool's pairs when fewer). Its test part is 3 of 4
(`stable_hash(pair_id, "test-ext2") % 4 != 0`), its double-checked part the lowest 27 % of
`stable_hash(pair_id, "double")` as before. The readers' sheets (texts: never in git) go to
/work/gold-ext, the references (no text; with the phrase, which readers must not see) beside it:

    .venv/bin/python benchmarks/gold_sets.py sample --round extension-2
    .venv/bin/python benchmarks/gold_sets.py adjudication --round extension-2
    .venv/bin/python benchmarks/gold_sets.py assemble --round extension-2 --lang ro
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from extractor.core.hashing import ref_key, stable_hash  # noqa: E402
from extractor.job.inputs import corpus_name_for  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.pairs.matching import matcher_for  # noqa: E402

SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
WORK = REPO / "benchmarks" / "_work"
GOLD = REPO / "benchmarks" / "gold"

# The sources of each language's gold set: files and folders under ../shared/data.
SOURCES = {
    "ro": ["text/ro-news/ro-news-realitatea-aleph.jsonl", "text/ro-speeches", "text/eltec-rom-20",
           "dumps/rowiki-real-3pages.xml"],
    "es": ["text/eltec-spa-20"],
    "en": ["dumps/enwiki-sample-206pages.xml.bz2"],
}
SAMPLE_SEED = "gold-2026-11-28"
TEST_SHARE = 3          # test part: stable_hash(pair_id, "test") % 3 == 0
DOUBLE_SHARE = 0.27     # the double-checked part: the lowest 27 % of stable_hash(pair_id, "double")
PER_STRATUM = 5         # phrase or neutral strategy: checked at least this often (all when fewer)
LABELS = ("contrasting", "entailment", "reasoning", "neutral")
VERDICTS = ("keep", *LABELS, "cannot_judge")

# The second extension round (`sample --round extension-2`; the module docstring).
EXT2 = "extension-2"
EXT2_SEED = "gold-ext2-2026-12-02"
EXT2_TEST_SALT, EXT2_TEST_SHARE = "test-ext2", 4   # test part: stable_hash(pair_id, "test-ext2") % 4 != 0
# Romanian's pool after the default filters is smaller than its test target for every label
# (decided after drawing, before any reading): every Romanian pair of the round is a test pair.
EXT2_ALL_TEST = ("ro",)
EXT2_TARGET = {"ro": 127, "es": 64, "en": 64}      # test pairs per label: 120 / 60 and ~5 % cannot_judge
EXT2_SHEETS = Path(os.environ.get("NLI_GOLD_EXT", "/work/gold-ext"))   # the readers' sheets and verdicts
EXT2_REFS = EXT2_SHEETS.with_name(EXT2_SHEETS.name + "-refs")          # references: not for the readers
EXT2_PASS1 = {"ro": "ro-pass1", "es": "es-en-pass1", "en": "es-en-pass1"}


def run_job(lang: str, out: Path, flags: list[str] = (), stages: str = "pairs", quiet: bool = True) -> Path:
    """The job at its default settings (plus `flags`) over the language's sources, in local
    mode; returns the output root (reused when it already holds a finished run with the same
    command line)."""
    inputs = [str(SHARED / s) for s in SOURCES[lang]]
    missing = [p for p in inputs if not Path(p).exists()]
    if missing:
        raise SystemExit(f"error: {missing[0]} not found; the gold sets' sources are under ../shared/data "
                         "(or $NLI_SHARED_DATA)")
    cmd = [sys.executable, str(REPO / "jobs" / "extract.py"), "--lang", lang, "--output", str(out),
           "--stages", stages, "--overwrite", *[a for p in inputs for a in ("--input", p)], *flags]
    stamp, key = out / ".gold-command.json", [code_digest(), *cmd[1:]]
    if stamp.exists() and json.loads(stamp.read_text()) == key and (out / "current").exists():
        return out
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
               PYSPARK_PYTHON=sys.executable)
    subprocess.run(cmd, check=True, env=env, cwd=REPO,
                   stdout=subprocess.DEVNULL if quiet else None)
    stamp.write_text(json.dumps(key))
    return out


def code_digest() -> str:
    """A digest of the engine's code and lexicons: a cached run is reused only by the same code."""
    h = hashlib.blake2b(digest_size=8)
    for path in sorted([*REPO.glob("extractor/**/*.py"), *REPO.glob("jobs/*.py"), *REPO.glob("phrase_lexicons/*")]):
        data = path.read_bytes()
        if path.suffix == ".yaml":  # the measured precision changes no pair: a new measurement reuses the runs
            data = re.sub(rb"# >>> measured_precision.*?# <<< measured_precision\n", b"", data, flags=re.S)
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + data)
    return h.hexdigest()


def read_pairs(out: Path, table: str = "pairs") -> pl.DataFrame:
    """The pairs table of a run (or another table of its kind: `checked`), with `location`: the
    join key of a gold item (corpus, premise ref, hypothesis ref)."""
    df = pl.read_parquet(str(out / table / "**" / "*.parquet"), hive_partitioning=True)
    keys = [location(c, p, h) for c, p, h in zip(df["corpus"], df["premise_ref"], df["hypothesis_ref"])]
    return df.with_columns(pl.Series("location", keys))


def location(corpus: str, premise_ref, hypothesis_ref) -> str:
    return "\x1f".join((corpus, ref_key(premise_ref), ref_key(hypothesis_ref)))


def load_gold(lang: str) -> list[dict]:
    path = GOLD / f"{lang}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gold_location(item: dict) -> str:
    return location(item["corpus"], item["premise_ref"], item["hypothesis_ref"])


def phrase_of(lexicon, marker: str | None) -> str | None:
    """The lexicon's spelling of a marker as written ("In consecinta" -> "În consecință")."""
    if marker is None:
        return None
    return matcher_for(lexicon).phrase_of(marker) or marker


def stratum(row: dict, lexicon) -> str:
    return f"phrase:{phrase_of(lexicon, row['marker'])}" if row["source"] == "marker" else f"neutral:{row['source']}"


def draw(pairs: pl.DataFrame, lexicon, size: int) -> list[dict]:
    """The stratified sample (see the module docstring), in hash order."""
    rows = sorted(pairs.to_dicts(), key=lambda r: stable_hash(r["pair_id"], SAMPLE_SEED))
    taken, per = [], {}
    for r in rows:
        s = stratum(r, lexicon)
        if per.get(s, 0) < PER_STRATUM:
            per[s] = per.get(s, 0) + 1
            taken.append(r)
    chosen = {r["pair_id"] for r in taken}
    for r in rows:
        if len(taken) >= size:
            break
        if r["pair_id"] not in chosen:
            taken.append(r)
            chosen.add(r["pair_id"])
    return taken


def part_of(pair_id: str, round_name: str = "initial", lang: str | None = None) -> str:
    if round_name == EXT2 and lang in EXT2_ALL_TEST:
        return "test"
    if round_name == EXT2:
        return "test" if stable_hash(pair_id, EXT2_TEST_SALT) % EXT2_TEST_SHARE != 0 else "tune"
    return "test" if stable_hash(pair_id, "test") % TEST_SHARE == 0 else "tune"


def double_checked(pair_ids: list[str]) -> set[str]:
    order = sorted(pair_ids, key=lambda p: stable_hash(p, "double"))
    return set(order[: -(-int(len(order) * DOUBLE_SHARE * 100) // 100)])


def reference(row: dict, lang: str, lexicon, round_name: str = "initial") -> dict:
    """A gold item's reference to its pair (no text)."""
    corpus_file = next(s for s in SOURCES[lang] if corpus_name_for(s) == row["corpus"])
    return {"pair_id": row["pair_id"], "lang": lang, "corpus": row["corpus"], "corpus_file": corpus_file,
            "doc_id": row["doc_id"], "premise_ref": row["premise_ref"], "hypothesis_ref": row["hypothesis_ref"],
            "auto_label": row["label"], "source": row["source"], "phrase": phrase_of(lexicon, row["marker"]),
            "part": part_of(row["pair_id"], round_name, lang)}


def cmd_sample(args) -> None:
    lexicon = load_lexicon(args.lang)
    out = run_job(args.lang, WORK / "gold-runs" / f"{args.lang}-default", quiet=False)
    pairs = read_pairs(out)
    sample = draw(pairs, lexicon, args.size)
    double = double_checked([r["pair_id"] for r in sample])
    sheet_dir = Path(args.out)
    sheet_dir.mkdir(parents=True, exist_ok=True)
    refs = [dict(reference(r, args.lang, lexicon), double=r["pair_id"] in double) for r in sample]
    with open(sheet_dir / f"{args.lang}-refs.jsonl", "w", encoding="utf-8") as f:
        for ref in refs:
            f.write(json.dumps(ref, ensure_ascii=False) + "\n")
    # The readers' sheets: the pair as the corpus has it and its automatic label, nothing else
    # (no phrase, no corpus): item ids are positions in hash order.
    texts = {r["pair_id"]: r for r in sample}
    with open(sheet_dir / f"{args.lang}-sheet.jsonl", "w", encoding="utf-8") as f:
        for i, ref in enumerate(refs):
            r = texts[ref["pair_id"]]
            f.write(json.dumps({"item": f"{args.lang}-{i:04d}", "premise": r["premise"], "hypothesis": r["hypothesis"],
                                "automatic_label": r["label"]}, ensure_ascii=False) + "\n")
    by_label = {lab: sum(1 for r in refs if r["auto_label"] == lab) for lab in LABELS}
    print(f"{args.lang}: pool {pairs.height} pairs, sample {len(refs)} ({by_label}), "
          f"test part {sum(r['part'] == 'test' for r in refs)}, double-checked {len(double)}, "
          f"strata {len({stratum(r, lexicon) for r in sample})}")


def surviving_test(gold: list[dict], emitted: dict) -> dict:
    """Per label, the judged test-part gold pairs that a run (`emitted`: location -> label)
    emits with that label: label_precision.py's test-part n."""
    have = dict.fromkeys(LABELS, 0)
    for g in gold:
        label = emitted.get(gold_location(g))
        if g.get("gold") and g["part"] == "test" and label is not None:
            have[label] += 1
    return have


def draw_ext2(pairs: pl.DataFrame, gold: list[dict], lang: str) -> tuple[list[dict], dict]:
    """The extension-2 draw (the module docstring): the pairs, and per label the pool, the
    gold file's surviving test pairs, the new pairs needed, drawn, and how many the test part
    still lacks."""
    ids, places = {g["pair_id"] for g in gold}, {gold_location(g) for g in gold}
    have = surviving_test(gold, dict(zip(pairs["location"], pairs["label"])))
    pool = sorted((r for r in pairs.to_dicts() if r["pair_id"] not in ids and r["location"] not in places),
                  key=lambda r: stable_hash(r["pair_id"], EXT2_SEED))
    taken, counts = [], {}
    for label in LABELS:
        rows = [r for r in pool if r["label"] == label]
        need, chosen, new_test = max(0, EXT2_TARGET[lang] - have[label]), [], 0
        for r in rows:
            if new_test >= need:
                break
            chosen.append(r)
            new_test += part_of(r["pair_id"], EXT2, lang) == "test"
        taken += chosen
        counts[label] = {"pool": len(rows), "existing_test": have[label], "needed_test": need,
                         "drawn": len(chosen), "new_test": new_test, "new_tune": len(chosen) - new_test,
                         "test_total": have[label] + new_test, "short": max(0, need - new_test)}
    return taken, counts


def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def reader_protocol() -> str:
    """The readers' PROTOCOL.md: docs/label-quality.md's protocol and the verdict format."""
    doc = (REPO / "docs" / "label-quality.md").read_text(encoding="utf-8")
    section = re.search(r"^## The protocol.*?(?=^## )", doc, re.S | re.M).group(0)
    return ("# Checking NLI pairs: the protocol\n\n" + section.split("\n", 1)[1].strip() + "\n\n"
            "## What to write\n\n"
            "Your sheet is `sheet.jsonl` in your folder: one JSON line per item with `item`, `lang`, "
            "`premise` (A), `hypothesis` (B) and `automatic_label`. Read every item yourself and "
            "decide by your own judgment (no program, script or heuristic decides for you). Write "
            "`verdicts.jsonl` in the same folder as the sheet, one JSON line per item, in any order:\n\n"
            '    {"item": "<item id>", "verdict": "keep", "note": "<optional short reason>"}\n\n'
            "`verdict` is one of `keep`, `contrasting`, `entailment`, `reasoning`, `neutral`, "
            "`cannot_judge`; `note` is optional (a few words: why a label was changed or a pair "
            "cannot be judged). Every item of the sheet gets exactly one line.\n")


def cmd_sample_ext2(args) -> None:
    langs = args.lang or list(EXT2_TARGET)
    drawn = [EXT2_REFS / f"{lang}-refs.jsonl" for lang in langs if (EXT2_REFS / f"{lang}-refs.jsonl").exists()]
    if drawn and not args.overwrite:
        raise SystemExit(f"error: {drawn[0]} exists: the round is drawn (a new draw would leave out the pairs it "
                         "assembled); --overwrite draws it again")
    sheets: dict[str, list] = {}
    second = []
    for lang in langs:
        lexicon = load_lexicon(lang)
        pairs = read_pairs(run_job(lang, WORK / "gold-runs" / f"{lang}-default", quiet=False))
        gold = load_gold(lang)
        taken, counts = draw_ext2(pairs, gold, lang)
        double = double_checked([r["pair_id"] for r in taken])
        taken.sort(key=lambda r: stable_hash(r["pair_id"], EXT2_SEED, "item"))
        first = 1 + max(int(g["item"].rsplit("-", 1)[1]) for g in gold)
        refs = [dict(reference(r, lang, lexicon, EXT2), round=EXT2, item=f"{lang}-{first + i:04d}",
                     double=r["pair_id"] in double) for i, r in enumerate(taken)]
        write_jsonl(EXT2_REFS / f"{lang}-refs.jsonl", refs)
        (EXT2_REFS / f"{lang}-counts.json").write_text(json.dumps(counts, indent=1) + "\n")
        # a sheet row: the pair as the corpus has it and its automatic label, nothing else
        for ref, r in zip(refs, taken):
            row = {"item": ref["item"], "lang": lang, "premise": r["premise"], "hypothesis": r["hypothesis"],
                   "automatic_label": r["label"]}
            sheets.setdefault(EXT2_PASS1[lang], []).append(row)
            if ref["double"]:
                second.append(row)
        print(f"{lang}: pool {pairs.height} pairs, {len(refs)} drawn ({refs[0]['item']}..{refs[-1]['item']}), "
              f"test {sum(r['part'] == 'test' for r in refs)}, tune {sum(r['part'] == 'tune' for r in refs)}, "
              f"double-checked {len(double)}")
        for label, c in counts.items():
            print(f"  {label:<12} " + ", ".join(f"{k} {v}" for k, v in c.items()))
    sheets["pass2"] = second
    protocol = reader_protocol()
    (EXT2_SHEETS).mkdir(parents=True, exist_ok=True)
    (EXT2_SHEETS / "PROTOCOL.md").write_text(protocol, encoding="utf-8")
    for folder, rows in sheets.items():
        rows.sort(key=lambda r: stable_hash(r["item"], EXT2_SEED, folder))
        write_jsonl(EXT2_SHEETS / folder / "sheet.jsonl", rows)
        (EXT2_SHEETS / folder / "PROTOCOL.md").write_text(protocol, encoding="utf-8")
        print(f"wrote {EXT2_SHEETS / folder / 'sheet.jsonl'}: {len(rows)} items")
    print(f"wrote the references (not for the readers) to {EXT2_REFS}")


def verdict_label(verdict: str, auto_label: str) -> str | None:
    """A reader's verdict as a label: `keep` is the automatic label, `cannot_judge` None."""
    return auto_label if verdict == "keep" else (None if verdict == "cannot_judge" else verdict)


def _verdicts(folders) -> dict:
    out = {}
    for folder in folders:
        path = folder / "verdicts.jsonl"
        if not path.exists():
            raise SystemExit(f"error: {path} not found; the reader of {folder.name} has not finished")
        for n, v in enumerate(read_jsonl(path), 1):
            if v.get("verdict", v.get("gold")) not in VERDICTS:
                raise SystemExit(f"error: {path}:{n}: verdict {v.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
            out[v["item"]] = v
    return out


def gold_entry(ref: dict, item: str, first: dict, second: dict, adjudicated: dict) -> dict:
    """A gold item from its reference and the readers' verdicts."""
    if item not in first:
        raise SystemExit(f"error: {item} has no reader-1 verdict; finish the checks first")
    if ref.get("double") and ref.get("round") == EXT2 and item not in second:
        raise SystemExit(f"error: {item} is in the double-checked part but has no reader-2 verdict")
    readers = {"reader_1": first[item]["verdict"]}
    labels = [verdict_label(first[item]["verdict"], ref["auto_label"])]
    if item in second:
        readers["reader_2"] = second[item]["verdict"]
        labels.append(verdict_label(second[item]["verdict"], ref["auto_label"]))
    gold, how = labels[0], "one reader"
    if len(labels) == 2:
        how = "two readers agree"
        if labels[0] != labels[1]:
            if item not in adjudicated:
                raise SystemExit(f"error: {item}: the readers differ and no adjudication is recorded")
            a = adjudicated[item]
            gold = a["gold"] if "gold" in a else verdict_label(a["verdict"], ref["auto_label"]) or "cannot_judge"
            gold, how = (None if gold == "cannot_judge" else gold), "adjudicated"
    entry = {k: ref[k] for k in ("pair_id", "lang", "corpus", "corpus_file", "doc_id", "premise_ref",
                                 "hypothesis_ref", "auto_label", "source", "phrase", "part")}
    entry.update(round=ref.get("round", "initial"), item=item, readers=readers, gold=gold, resolved_by=how)
    return entry


def write_gold(lang: str, items: list[dict]) -> None:
    GOLD.mkdir(parents=True, exist_ok=True)
    path = GOLD / f"{lang}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for entry in items:
            f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {path}: {len(items)} items, {sum(e['gold'] is not None for e in items)} judged, "
          f"{sum('reader_2' in e['readers'] for e in items)} double-checked, "
          f"{sum(e['resolved_by'] == 'adjudicated' for e in items)} adjudicated")


def ext2_verdicts(root: Path) -> tuple[dict, dict, dict]:
    """Reader 1's, reader 2's and the adjudicator's verdicts of the extension-2 round."""
    return (_verdicts(sorted(root.glob("*pass1"))), _verdicts([root / "pass2"]),
            _verdicts([root / "adjudicate"]) if (root / "adjudicate" / "verdicts.jsonl").exists() else {})


def cmd_assemble_ext2(args) -> None:
    """The gold file with the extension-2 items appended (those of an earlier assembly replaced)."""
    first, second, adjudicated = ext2_verdicts(Path(args.annotations))
    refs = read_jsonl(Path(args.refs) / f"{args.lang}-refs.jsonl")
    kept = [g for g in load_gold(args.lang) if g.get("round") != EXT2]
    write_gold(args.lang, kept + [gold_entry(ref, ref["item"], first, second, adjudicated) for ref in refs])


def cmd_adjudication(args) -> None:
    """The adjudicator's sheet: every double-checked item whose two readers' labels differ,
    with both verdicts and notes."""
    root = Path(args.annotations)
    first, second, _ = ext2_verdicts(root)
    texts = {r["item"]: r for folder in sorted(root.glob("*pass1")) for r in read_jsonl(folder / "sheet.jsonl")}
    rows = []
    for lang in args.lang or list(EXT2_TARGET):
        for ref in read_jsonl(Path(args.refs) / f"{lang}-refs.jsonl"):
            item = ref["item"]
            if not ref["double"]:
                continue
            if item not in first or item not in second:
                raise SystemExit(f"error: {item} lacks a reader-{1 if item not in first else 2} verdict")
            a, b = first[item], second[item]
            if verdict_label(a["verdict"], ref["auto_label"]) != verdict_label(b["verdict"], ref["auto_label"]):
                rows.append(dict(texts[item], reader_1={"verdict": a["verdict"], "note": a.get("note", "")},
                                 reader_2={"verdict": b["verdict"], "note": b.get("note", "")}))
    write_jsonl(root / "adjudicate" / "sheet.jsonl", rows)
    print(f"wrote {root / 'adjudicate' / 'sheet.jsonl'}: {len(rows)} items where the readers differ; the "
          f"adjudicator writes verdicts.jsonl beside it ({{\"item\", \"verdict\", \"note\"}}, PROTOCOL.md's verdicts)")


def cmd_assemble(args) -> None:
    """The gold file of a language from the readers' verdict files (RoNLI's protocol, docs/
    label-quality.md): reader 1 checked every item, reader 2 the double-checked part without
    seeing reader 1, and an adjudicator decided where their labels differ."""
    root = Path(args.annotations)
    first = _verdicts(sorted(root.glob("*pass1*")))
    second = _verdicts(sorted(root.glob("*pass2*")))
    adjudicated = _verdicts(sorted(root.glob("adjudicate*")))
    sheets = Path(args.sheets)
    items = []
    for prefix in ("", "-ext"):
        refs_path = sheets / f"{args.lang}{prefix}-refs.jsonl"
        if not refs_path.exists():
            continue
        refs, sheet = read_jsonl(refs_path), read_jsonl(sheets / f"{args.lang}{prefix}-sheet.jsonl")
        items += [gold_entry(ref, row["item"], first, second, adjudicated) for ref, row in zip(refs, sheet)]
    write_gold(args.lang, items)


def cmd_agreement(args) -> None:
    """Cohen's kappa between the two readers on the double-checked part, with the trainer's
    agreement code (trainer/annotation/agreement.py): over the labels they gave, and over
    keep/change (the issue's measure)."""
    from trainer.annotation.agreement import cohen  # the trainer extra: only this command needs it

    for lang in args.lang or sorted(SOURCES):
        items = [g for g in load_gold(lang) if args.round in (None, g.get("round", "initial"))]
        if not items:
            print(f"{lang}: no items of round {args.round}")
            continue
        both = [g for g in items if "reader_2" in g["readers"]]
        a = [verdict_label(g["readers"]["reader_1"], g["auto_label"]) or "cannot_judge" for g in both]
        b = [verdict_label(g["readers"]["reader_2"], g["auto_label"]) or "cannot_judge" for g in both]
        ka = ["keep" if g["readers"]["reader_1"] == "keep" else "change" for g in both]
        kb = ["keep" if g["readers"]["reader_2"] == "keep" else "change" for g in both]
        label_kappa = cohen(a, b, (*LABELS, "cannot_judge"))
        keep_kappa = cohen(ka, kb, ("keep", "change"))
        judged = sum(g["gold"] is not None for g in items)
        print(f"{lang}: {len(items)} items ({judged} judged; test part {sum(g['part'] == 'test' for g in items)}), "
              f"double-checked {len(both)} ({len(both) / len(items):.0%}), agreement {sum(x == y for x, y in zip(a, b))}"
              f"/{len(both)}, Cohen's kappa labels {label_kappa:.3f}, keep/change {keep_kappa:.3f}, "
              f"adjudicated {sum(g['resolved_by'] == 'adjudicated' for g in items)}")


def cmd_sample_round(args) -> None:
    if args.round == EXT2:
        cmd_sample_ext2(args)
    elif args.lang is None or args.size is None:
        raise SystemExit("error: the initial round's sample needs --lang and --size")
    else:
        cmd_sample(args)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="run the default job on the sources and draw the sample to check")
    s.add_argument("--round", default="initial", choices=("initial", EXT2),
                   help=f"initial: the first draw (--lang, --size); {EXT2}: the second extension, every language "
                        f"unless --lang, sheets to {EXT2_SHEETS}")
    s.add_argument("--lang", choices=sorted(SOURCES))
    s.add_argument("--size", type=int)
    s.add_argument("--out", default=str(WORK / "gold-sheets"))
    s.add_argument("--overwrite", action="store_true", help=f"{EXT2}: draw again over the sheets and references")
    a = sub.add_parser("assemble", help="write benchmarks/gold/<lang>.jsonl from the readers' verdict files")
    a.add_argument("--round", default="initial", choices=("initial", EXT2),
                   help=f"{EXT2}: append that round's items to the gold file (from --annotations and --refs)")
    a.add_argument("--lang", required=True, choices=sorted(SOURCES))
    a.add_argument("--annotations", help="folder of <task>/verdicts.jsonl (pass1, pass2, adjudicate); "
                                         f"{EXT2}: default {EXT2_SHEETS}")
    a.add_argument("--sheets", default=str(WORK / "gold-sheets"))
    a.add_argument("--refs", default=str(EXT2_REFS), help=f"{EXT2}: the folder of <lang>-refs.jsonl")
    j = sub.add_parser("adjudication", help=f"the adjudicator's sheet of the {EXT2} round's disagreements")
    j.add_argument("--round", default=EXT2, choices=(EXT2,))
    j.add_argument("--lang", action="append", choices=sorted(SOURCES))
    j.add_argument("--annotations", default=str(EXT2_SHEETS))
    j.add_argument("--refs", default=str(EXT2_REFS))
    k = sub.add_parser("agreement", help="Cohen's kappa of the two readers on the double-checked parts")
    k.add_argument("--lang", action="append", choices=sorted(SOURCES))
    k.add_argument("--round", help="only this round's items (initial, extension, extension-2)")
    args = p.parse_args(argv)
    if args.command == "assemble":
        if args.round == EXT2:
            args.annotations = args.annotations or str(EXT2_SHEETS)
            cmd_assemble_ext2(args)
            return
        if args.annotations is None:
            raise SystemExit("error: assemble needs --annotations")
    {"sample": cmd_sample_round, "assemble": cmd_assemble, "adjudication": cmd_adjudication,
     "agreement": cmd_agreement}[args.command](args)


if __name__ == "__main__":
    main()
