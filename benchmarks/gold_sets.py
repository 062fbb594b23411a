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


def read_pairs(out: Path) -> pl.DataFrame:
    """The pairs table of a run, with `location`: the join key of a gold item (corpus,
    premise ref, hypothesis ref)."""
    df = pl.read_parquet(str(out / "pairs" / "**" / "*.parquet"), hive_partitioning=True)
    keys = [location(c, p, h) for c, p, h in zip(df["corpus"], df["premise_ref"], df["hypothesis_ref"])]
    return df.with_columns(pl.Series("location", keys))


def location(corpus: str, premise_ref, hypothesis_ref) -> str:
    return "\x1f".join((corpus, ref_key(premise_ref), ref_key(hypothesis_ref)))


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


def part_of(pair_id: str) -> str:
    return "test" if stable_hash(pair_id, "test") % TEST_SHARE == 0 else "tune"


def double_checked(pair_ids: list[str]) -> set[str]:
    order = sorted(pair_ids, key=lambda p: stable_hash(p, "double"))
    return set(order[: -(-int(len(order) * DOUBLE_SHARE * 100) // 100)])


def reference(row: dict, lang: str, lexicon) -> dict:
    """A gold item's reference to its pair (no text)."""
    corpus_file = next(s for s in SOURCES[lang] if corpus_name_for(s) == row["corpus"])
    return {"pair_id": row["pair_id"], "lang": lang, "corpus": row["corpus"], "corpus_file": corpus_file,
            "doc_id": row["doc_id"], "premise_ref": row["premise_ref"], "hypothesis_ref": row["hypothesis_ref"],
            "auto_label": row["label"], "source": row["source"], "phrase": phrase_of(lexicon, row["marker"]),
            "part": part_of(row["pair_id"])}


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


def verdict_label(verdict: str, auto_label: str) -> str | None:
    """A reader's verdict as a label: `keep` is the automatic label, `cannot_judge` None."""
    return auto_label if verdict == "keep" else (None if verdict == "cannot_judge" else verdict)


def _verdicts(folders) -> dict:
    out = {}
    for folder in folders:
        for line in (folder / "verdicts.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                v = json.loads(line)
                out[v["item"]] = v
    return out


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
        refs = [json.loads(x) for x in refs_path.read_text(encoding="utf-8").splitlines()]
        sheet = [json.loads(x) for x in (sheets / f"{args.lang}{prefix}-sheet.jsonl").read_text(encoding="utf-8").splitlines()]
        for ref, row in zip(refs, sheet):
            item = row["item"]
            if item not in first:
                raise SystemExit(f"error: {item} has no reader-1 verdict; finish the checks first")
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
                    gold = adjudicated[item]["gold"]
                    gold, how = (None if gold == "cannot_judge" else gold), "adjudicated"
            entry = {k: ref[k] for k in ("pair_id", "lang", "corpus", "corpus_file", "doc_id", "premise_ref",
                                         "hypothesis_ref", "auto_label", "source", "phrase", "part")}
            entry.update(round=ref.get("round", "initial"), item=item, readers=readers, gold=gold, resolved_by=how)
            items.append(entry)
    GOLD.mkdir(parents=True, exist_ok=True)
    path = GOLD / f"{args.lang}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for entry in items:
            f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {path}: {len(items)} items, {sum(e['gold'] is not None for e in items)} judged, "
          f"{sum('reader_2' in e['readers'] for e in items)} double-checked, "
          f"{sum(e['resolved_by'] == 'adjudicated' for e in items)} adjudicated")


def cmd_agreement(args) -> None:
    """Cohen's kappa between the two readers on the double-checked part, with the trainer's
    agreement code (trainer/annotation/agreement.py): over the labels they gave, and over
    keep/change (the issue's measure)."""
    from trainer.annotation.agreement import cohen  # the trainer extra: only this command needs it

    for lang in args.lang or sorted(SOURCES):
        items = [json.loads(x) for x in (GOLD / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
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


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="run the default job on the sources and draw the sample to check")
    s.add_argument("--lang", required=True, choices=sorted(SOURCES))
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--out", default=str(WORK / "gold-sheets"))
    a = sub.add_parser("assemble", help="write benchmarks/gold/<lang>.jsonl from the readers' verdict files")
    a.add_argument("--lang", required=True, choices=sorted(SOURCES))
    a.add_argument("--annotations", required=True, help="folder of <task>/verdicts.jsonl (pass1, pass2, adjudicate)")
    a.add_argument("--sheets", default=str(WORK / "gold-sheets"))
    k = sub.add_parser("agreement", help="Cohen's kappa of the two readers on the double-checked parts")
    k.add_argument("--lang", action="append", choices=sorted(SOURCES))
    args = p.parse_args(argv)
    {"sample": cmd_sample, "assemble": cmd_assemble, "agreement": cmd_agreement}[args.command](args)


if __name__ == "__main__":
    main()
