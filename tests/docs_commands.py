"""The registry of tests/test_docs_run.py: for every command of a shell block of README.md
and docs/*.md (keyed by the file and the command as written, continuation lines joined,
trailing comment removed, spaces collapsed), either

    Run(...)   run it in the docs workspace, after substitutions (placeholders such as
               RUN_DIR made concrete, smaller settings such as --epochs 1), with checks of
               what the text promises (files written, lines printed); `needs` names what
               must exist first (a RESOURCE below, or what another entry `provides`)
    Skip(why)  not run here: a cluster, a GPU, a cloud account, Label Studio, hours

When a doc command changes, its entry here changes with it (the test says which).

Substitution values may hold {ws} (the workspace), {repo}, {shared} (the shared data
folder) and {tiny_bert} (a 2-layer BERT checkpoint built locally, tests/conftest.py).
Everywhere: `./spark-submit.sh` is the repository's (by its absolute path: the commands
run in a folder outside the repository) and `../shared/data/nli/` is `small/`, a slice of
the same SciNLI files (400 training pairs, 400 development pairs).
"""
from __future__ import annotations

import bz2
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

GLOBAL_SUBS = (("./spark-submit.sh", "{repo}/spark-submit.sh"), ("../shared/data/nli/", "small/"))


@dataclass
class Result:
    cmd: str
    rc: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def out(self) -> str:
        return self.stdout + "\n" + self.stderr


@dataclass
class Run:
    sub: tuple = ()            # (old, new) text replacements, in order
    append: str = ""           # extra flags appended (small settings)
    needs: tuple = ()
    provides: str | None = None
    checks: tuple = ()         # functions (ws, result) -> None that assert
    rc: int = 0
    env: dict = field(default_factory=dict)
    timeout: int = 600

    def command_line(self, text: str, ws) -> str:
        for old, new in GLOBAL_SUBS:
            text = text.replace(old, new)
        for old, new in self.sub:
            if old not in text:
                raise AssertionError(f"substitution {old!r} does not apply to: {text}")
            text = text.replace(old, new)
        if self.append:  # before a trailing comment
            text = re.sub(r"(^|\s)#(?![!{]).*$", "", text).rstrip() + " " + self.append
        if "small/" in text:
            ws.need("scinli")
        if "{tiny_bert}" in text:
            text = text.replace("{tiny_bert}", str(ws.tiny_bert()))
        return ws.fill(text)

    def verify(self, ws, result: Result) -> None:
        if result.rc != self.rc:
            tail = "\n".join(result.out.strip().splitlines()[-15:])
            raise AssertionError(f"exit {result.rc} (expected {self.rc}): {result.cmd}\n{tail}")
        for check in self.checks:
            check(ws, result)


@dataclass
class Skip:
    reason: str


# --------------------------------------------------------------------------- checks

def files(*rels: str):
    """Each path (a glob) exists under the workspace."""
    def check(ws, result):
        for rel in rels:
            found = list(ws.root.glob(rel)) if any(c in rel for c in "*?[") else [ws.path(rel)] * ws.path(rel).exists()
            assert found, f"{rel} was not written by: {result.cmd}"
    return check


def prints(*patterns: str):
    """Each regular expression is found in what the command printed (stdout and stderr)."""
    def check(ws, result):
        for pattern in patterns:
            assert re.search(pattern, result.out, re.M), f"{pattern!r} not printed by: {result.cmd}\n{result.out[-2000:]}"
    return check


def json_file(rel: str, test):
    def check(ws, result):
        data = json.loads(ws.path(rel).read_text())
        assert test(data), f"{rel}: unexpected content for: {result.cmd}"
    return check


SPLIT_FILES = ("sentences", "pairs", "splits/README.md", "splits/train", "splits/validation", "splits/test",
               "splits/stats.json", "splits/leakage.json", "splits/class_distribution.png", "stats.json",
               "manifest.json")


# Jobs whose command is about what they read (an input, a lexicon file, a folder) run stage 1
# only: 13 job commands would otherwise cost minutes of CI time.
STAGE1 = "--stages sentences"
STAGE1_FILES = ("sentences", "stats.json", "manifest.json", "punkt_params.json")


def job_output(root: str, tables=SPLIT_FILES):
    """The layout README.md "Outputs" promises for a job's output root."""
    return files(*(f"{root}/{t}" for t in tables))


# --------------------------------------------------------------------------- resources

def _scinli(ws):
    """small/: 400 training and 400 development pairs of the shared SciNLI files (every 5th
    row), and the files the docs name beside the workspace's root: SciNLI-named copies,
    train/dev/test.jsonl (SciNLI columns), ph/train|dev|test.jsonl (premise/hypothesis/label),
    an SNLI-style 3-label file, a sliced copy, unlabelled rows, two dataset folders."""
    src = ws.shared / "nli"
    if not (src / "scinli-dev.jsonl").exists():
        pytest.skip(f"{src}/scinli-*.jsonl not found (set NLI_SHARED_DATA)")
    small = ws.path("small")
    small.mkdir(exist_ok=True)
    rows = {}
    for name in ("scinli-train-2k-human.jsonl", "scinli-dev.jsonl"):
        lines = (src / name).read_text(encoding="utf-8").splitlines()
        keep = [l for i, l in enumerate(lines) if i % 5 == 0]
        (small / name).write_text("\n".join(keep) + "\n", encoding="utf-8")
        shutil.copy(small / name, ws.path(name))
        rows[name] = [json.loads(l) for l in keep]
    train, dev = rows["scinli-train-2k-human.jsonl"], rows["scinli-dev.jsonl"]

    def write(rel, items):
        path = ws.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")

    write("train.jsonl", train)
    write("dev.jsonl", dev[:200])
    write("test.jsonl", dev[200:])
    three = [dict(r, label="contradiction" if r["label"] == "contrasting" else r["label"]) for r in dev
             if r["label"] != "reasoning"]
    write("scinli-dev-3label.jsonl", three)
    write("snli.jsonl", [{"sentence1": r["sentence1"], "sentence2": r["sentence2"], "gold_label": r["label"]}
                         for r in three])
    comparative = re.compile(r"\b(more|less|better|worse|higher|lower)\b", re.I)
    write("scinli-dev-sliced.jsonl", [dict(
        r, premise_length="< 15" if len(r["sentence1"].split()) < 15 else "15-29" if len(r["sentence1"].split()) < 30
        else "30+", tags=[t for t, hit in (("NEG", re.search(r"\b(not|no|never)\b", r["sentence1"] + r["sentence2"])),
                                          ("NUM", re.search(r"\d", r["sentence1"] + r["sentence2"])),
                                          ("COMP", comparative.search(r["sentence1"] + r["sentence2"]))) if hit])
        for r in dev])
    ours = [{"pair_id": r["id"] if "id" in r else str(i), "premise": r["sentence1"], "hypothesis": r["sentence2"],
             "label": r["label"]} for i, r in enumerate(dev)]
    write("other.jsonl", ours[:100])
    ph_train = [{"pair_id": f"t{i}", "premise": r["sentence1"], "hypothesis": r["sentence2"], "label": r["label"]}
                for i, r in enumerate(train)]
    write("ph/train.jsonl", ph_train)
    write("ph/dev.jsonl", ours[:200])
    write("ph/test.jsonl", ours[200:])
    write("unlabelled.jsonl", [{k: v for k, v in r.items() if k != "label"} for r in ours[100:150]])
    write("xnli-ro/validation.jsonl", ours[:100])
    write("xnli-ro/test.jsonl", ours[100:200])
    ids = {"entailment": 0, "neutral": 1, "contradiction": 2}
    for split, part in (("validation", three[:150]), ("test", three[150:])):
        write(f"xnli_ro/{split}.jsonl", [{"premise": r["sentence1"], "hypothesis": r["sentence2"],
                                           "label": ids[r["label"]]} for r in part])
    return small


def _lineup(ws, keep=("baseline", "e2l"), name="lineup-small.yaml"):
    """examples/lineup-cbow-cpu.yaml made small: two of its entries (the reference and a
    cartography subset), one seed, one epoch, on small/."""

    ws.need("scinli")
    spec = yaml.safe_load((ws.repo / "examples" / "lineup-cbow-cpu.yaml").read_text())
    spec["seeds"] = 1
    spec["train_args"] = {k: (v.replace("../shared/data/nli/", "small/") if isinstance(v, str) else v)
                          for k, v in spec["train_args"].items()}
    spec["train_args"]["epochs"] = 1
    spec["lineup"] = [e for e in spec["lineup"] if (e if isinstance(e, str) else e["name"]) in keep]
    path = ws.path(name)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _dump(name: str, lang: str):
    def make(ws):
        sample = next((ws.repo / "samples" / lang).glob("*.xml"))
        path = ws.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bz2.compress(sample.read_bytes()))
        return path
    return make


def _lexicon(name: str):
    def make(ws):
        path = ws.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ws.repo / "phrase_lexicons" / "en.yaml", path)
        return path
    return make


def _manifest(ws):
    """corpora.yaml: the Spanish sample (train) and a Spanish text file (test-only)."""
    ws.need("books")
    ws.path("corpora.yaml").write_text(
        "- {name: es-sample, genre: wikipedia, path: samples/es, role: train}\n"
        "- {name: books, genre: fiction, format: text, path: books, role: test-only}\n")
    return ws.path("corpora.yaml")


def _books(ws):
    """books/: two Spanish novels of the shared ELTeC files, cut to 40,000 characters."""
    src = ws.shared / "text" / "eltec-spa-20"
    if not src.is_dir():
        pytest.skip(f"{src} not found (set NLI_SHARED_DATA)")
    books = ws.path("books")
    books.mkdir(exist_ok=True)
    for path in sorted(src.glob("*.txt"))[:2]:
        (books / path.name).write_text(path.read_text(encoding="utf-8")[:40_000], encoding="utf-8")
    return books


def _splits_link(ws):
    ws.need("ro")
    link = ws.path("splits")
    if not link.exists():
        link.symlink_to(ws.path("output/ro/splits"))
    return link


def _xnli_checkpoint(ws):
    """A 3-label (XNLI names) GPT-2-style sequence classifier built locally, in models/xnli."""
    from tests.trainer_fixtures import build_untrained_gpt2

    import re as _re

    words = _re.findall(r"\w+", "".join(p.read_text(encoding="utf-8") for p in (ws.repo / "samples" / "ro").glob("*.xml")))
    texts = [" ".join(words[i:i + 40]) for i in range(0, len(words), 40)]
    # 1,024 positions: a checkpoint's tokenizer that sets no model_max_length is not truncated
    return build_untrained_gpt2(ws.path("models/xnli"), texts, max_positions=1024,
                                labels=["entailment", "neutral", "contradiction"])


RESOURCES = {
    "scinli": _scinli,
    "lineup-small": _lineup,
    "rowiki-dump": _dump("rowiki-latest-pages-articles.xml.bz2", "ro"),
    "home-dump": _dump("home/dumps/rowiki-latest-pages-articles.xml.bz2", "ro"),
    "my-dump": _dump("my-dump.xml.bz2", "en"),
    "my-dump-2": _dump("my.xml.bz2", "en"),
    "home-data": _dump("home/data/rel.xml.bz2", "en"),
    "enwiki-dump": _dump("enwiki.xml.bz2", "en"),
    "my-lexicon": _lexicon("my-lexicon.yaml"),
    "xx-lexicon": _lexicon("path/to/xx.yaml"),
    "books": _books,
    "corpora": _manifest,
    "splits": _splits_link,
    "xnli-checkpoint": _xnli_checkpoint,
}

# --------------------------------------------------------------------------- skips

CLUSTER = "needs a Spark cluster; tests/test_cluster.py runs the job on a standalone cluster the suite starts, from a folder outside the repository"
STANDALONE = ("starts a standalone cluster on fixed ports in the background; tests/test_cluster.py runs the same "
              "through a cluster the suite starts on free ports")
CLOUD = "needs Docker and a Google Cloud account (the images are built with podman by docker/build-local.sh)"
LABEL_STUDIO = "needs a Label Studio server; tests/test_label_studio.py imports real Label Studio exports"
GPU = "needs GPUs"
ENCODER = ("builds or checks the 470 MB checkpoint in the user's cache (the set-up runs it); "
           "tests/test_encoder.py builds one per session and checks the cache, the checkpoint and the trainer's names")
SUITE = "runs the whole test suite (11+ minutes), this test included; CI runs it (.ci/run)"

RO = "./spark-submit.sh jobs/extract.py --lang ro"
RO_CHECKS = (job_output("output/ro"), prints(r"\[extract\] done: .*output/ro"))
SCINLI_CBOW = ("python -m trainer train --model cbow-softmax --epochs 5 --train ../shared/data/nli/scinli-train-2k-human.jsonl "
               "--validation ../shared/data/nli/scinli-dev.jsonl --test ../shared/data/nli/scinli-dev.jsonl "
               "--premise sentence1 --hypothesis sentence2 --output runs/scinli-cbow")
SAME_FLAGS = ("--model cbow-softmax --epochs 1 --train small/scinli-train-2k-human.jsonl --validation small/scinli-dev.jsonl "
              "--test small/scinli-dev.jsonl --premise sentence1 --hypothesis sentence2")
# commands of one workspace that write the same default output folder (RUN_DIR/evaluation,
# RUN_DIR/consistency) in any order: a writing command refuses an existing output otherwise
OVERWRITE = "--overwrite"
RUN_FILES = ("metrics.json", "config.json", "predictions.parquet", "model")


def run_dir(rel: str, *names: str):
    return files(*(f"{rel}/{n}" for n in (names or RUN_FILES)))


REGISTRY: dict[str, dict[str, Run | Skip]] = {
    "README.md": {
        RO: Run(provides="ro", checks=RO_CHECKS),
        "./run-tests.sh": Skip(SUITE),
        "source .venv/bin/activate": Run(),
        "./spark-submit.sh jobs/extract.py --lang ro --input rowiki-latest-pages-articles.xml.bz2 --output out/ro":
            Run(needs=("rowiki-dump",), append=STAGE1, checks=(job_output("out/ro", STAGE1_FILES),)),
        "./spark-submit.sh jobs/extract.py --lang es --manifest corpora.yaml":
            Run(needs=("corpora",), checks=(job_output("output/es"), json_file(
                "output/es/stats.json", lambda s: {c["role"] for c in s["job"]["corpora"]} == {"train", "test-only"}))),
        "./spark-submit.sh jobs/extract.py --lang my-lexicon.yaml --input my-dump.xml.bz2 --output out/xx":
            Run(needs=("my-lexicon", "my-dump"), provides="xx", append=STAGE1,
                checks=(job_output("out/xx", STAGE1_FILES), json_file("out/xx/stats.json",
                                                                    lambda s: s["job"]["lexicon"] == "my-lexicon.yaml"))),
        "./spark-submit.sh --master spark://HOST:7077 jobs/extract.py --lang ro --output /shared/out/ro": Skip(CLUSTER),
        "./spark-submit.sh --master yarn jobs/extract.py --lang en --input hdfs:///dumps/enwiki.xml.bz2 --output hdfs:///nli/en":
            Skip("needs a YARN cluster and HDFS"),
        "docker build -f docker/dataproc-serverless.Dockerfile -t REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 .":
            Skip(CLOUD),
        "gcloud dataproc batches submit pyspark file:///opt/nli/extract.py --region=REGION --version=3.0 "
        "--container-image=REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 -- --lang ro "
        "--input gs://BUCKET/rowiki-latest-pages-articles.xml.bz2 --output gs://BUCKET/out/ro": Skip(CLOUD),
        "spark-submit \"$(python -c 'import jobs.extract as j; print(j.__file__)')\" --lang ro --input ... --output ...":
            Run(sub=(("--input ... --output ...", "--input samples/ro --output out/any-spark"),), append=STAGE1,
                checks=(job_output("out/any-spark", STAGE1_FILES),)),
        "NLI_EXTRAS=extract,train ./spark-submit.sh --setup-only": Run(checks=(prints(r"^\[setup\] ready: "),)),
        "NLI_EXTRAS=extract,hf ./spark-submit.sh --setup-only": Run(checks=(prints(r"^\[setup\] ready: "),)),
        ".venv/bin/python -c 'import datasets; print(datasets.load_dataset(\"output/ro/splits\"))'":
            Run(needs=("ro",), sub=((".venv/bin/python", "{repo}/.venv/bin/python"),),
                checks=(prints(r"train: Dataset", r"num_rows: 156"),)),
        "python -m trainer train --model cbow-softmax --epochs 5 --data output/ro/splits --output runs/ro-cbow":
            Run(needs=("ro",), sub=(("--epochs 5", "--epochs 2"),), provides="ro-cbow",
                checks=(run_dir("runs/ro-cbow", "metrics.json", "dynamics"),)),
        "python -m trainer cartography runs/ro-cbow":
            Run(needs=("ro-cbow",), checks=(files("runs/ro-cbow/cartography/data_map.png"),)),
        "python -m trainer stats --data output/ro/splits": Run(needs=("ro",), checks=(prints(r"^\|", r"(?i)leakage"),)),
        "python -m trainer train --data output/ro/splits --model tfidf-lr --output runs/ro-tfidf":
            Run(needs=("ro",), provides="ro-tfidf", checks=(run_dir("runs/ro-tfidf"), prints(r"macro-F1"))),
        "python -m trainer train --data output/ro/splits --model transformer --pretrained "
        "multilingual-e5-small --encoding cross --seeds 5 --output runs/robert":
            Run(needs=("ro",), sub=(("multilingual-e5-small", "{tiny_bert}"),
                                     ("--seeds 5", "--seeds 2"), ("runs/robert", "runs/robert-cross")),
                append="--epochs 1", checks=(run_dir("runs/robert-cross", "seed_0", "seed_1", "seeds.json",
                                                      "metrics.json"),)),
        SCINLI_CBOW: Run(sub=(("--epochs 5", "--epochs 1"),), provides="scinli-cbow",
                         checks=(run_dir("runs/scinli-cbow", "metrics.json", "dynamics"),)),
        "python -m trainer cartography runs/scinli-cbow":
            Run(needs=("scinli-cbow",), checks=(files("runs/scinli-cbow/cartography/data_map.png"),)),
        "python -m trainer experiment examples/lineup-cbow-cpu.yaml":
            Run(needs=("lineup-small",), sub=(("examples/lineup-cbow-cpu.yaml", "lineup-small.yaml"),),
                checks=(files("runs/experiment-scinli-cbow/results.md", "runs/experiment-scinli-cbow/results.json"),)),
    },
    "docs/annotation.md": {
        "python -m trainer annotate export --data output/ro/splits --split validation --split test --n 2000 "
        "--sample balanced --seed 13 --annotators 3 --output validation/round1":
            Run(needs=("ro",), provides="round1", checks=(files(
                "validation/round1/manifest.json", "validation/round1/instructions.md",
                "validation/round1/annotators/round1-annotator1.csv", "validation/round1/annotators/round1-annotator3.csv",
                "validation/round1/label_studio/tasks.json", "validation/round1/label_studio/config.xml",
                "validation/round1/label_studio/instructions.html"),)),
        "python -m trainer annotate export --data scinli-dev.jsonl --premise sentence1 --hypothesis sentence2 "
        "--annotators ana,bogdan,carmen --n 400 --sample natural --output batch":
            Run(needs=("scinli",), checks=(files("batch/manifest.json", "batch/annotators/*-ana.csv",
                                                 "batch/annotators/*-carmen.csv"),)),
        "H=\"Authorization: Token $TOKEN\"": Skip(LABEL_STUDIO),
        "curl -H \"$H\" -H 'Content-Type: application/json' -X POST $LS/api/projects -d \"$(jq -n --rawfile c "
        "label_studio/config.xml '{title: \"round 1\", label_config: $c, maximum_annotations: 3}')\"": Skip(LABEL_STUDIO),
        "curl -H \"$H\" -H 'Content-Type: application/json' -X POST $LS/api/projects/1/import "
        "--data @label_studio/tasks.json": Skip(LABEL_STUDIO),
        "curl -H \"$H\" \"$LS/api/projects/1/export?exportType=JSON\" -o round1-export.json": Skip(LABEL_STUDIO),
        "python -m trainer annotate import validation/round1/annotators/*.csv --data output/ro/splits "
        "--output validation/import1":
            Run(needs=("round1-simulated",), provides="import1", checks=(files(
                "validation/import1/agreement.json", "validation/import1/report.md",
                "validation/import1/confusion_matrix.png", "validation/import1/human_validation.md",
                "validation/import1/unresolved.csv", "validation/import1/annotations.parquet",
                "validation/import1/validated"),)),
        "python -m trainer annotate import round1-export.json --data output/ro/splits --batch validation/round1 "
        "--cartography runs/ro-validation-bert --output validation/import1": Skip(LABEL_STUDIO),
        "python -m trainer annotate export --data output/ro/splits --unresolved validation/import1 --annotators 2 "
        "--output validation/round2":
            Run(needs=("import1",), provides="round2", checks=(files("validation/round2/manifest.json"),)),
        "python -m trainer annotate import validation/round1/annotators/*.csv validation/round2/annotators/*.csv "
        "--data output/ro/splits --policy majority --output validation/import2":
            Run(needs=("round2",), checks=(files("validation/import2/agreement.json", "validation/import2/report.md"),)),
        "python -m trainer.annotation.simulate validation/round1 --data output/ro/splits --accuracy 0.9 0.8 0.7 "
        "--skip 0.03": Run(needs=("round1",), provides="round1-simulated"),
    },
    "docs/cartography.md": {
        "time " + SCINLI_CBOW: Run(sub=(("--epochs 5", "--epochs 1"), ("runs/scinli-cbow", "runs/c-cbow")),
                                  provides="c-cbow", checks=(prints(r"^real\s"), run_dir("runs/c-cbow", "dynamics"))),
        "time python -m trainer cartography runs/scinli-cbow":
            Run(needs=("c-cbow",), sub=(("runs/scinli-cbow", "runs/c-cbow"),), provides="c-cart",
                checks=(files("runs/c-cbow/cartography/data_map.png"),)),
        "python -m trainer train ...same flags... --output runs/scinli-cbow-e2la --subset e2l+a "
        "--cartography-from runs/scinli-cbow":
            Run(needs=("c-cart",), sub=(("...same flags...", SAME_FLAGS), ("runs/scinli-cbow", "runs/c-cbow")),
                checks=(run_dir("runs/c-cbow-e2la", "metrics.json"),)),
        "python -m trainer train ...same flags... --output runs/scinli-cbow-stra --curriculum cart-stra++ "
        "--cartography-from runs/scinli-cbow":
            Run(needs=("c-cart",), provides="c-stra", sub=(("...same flags...", SAME_FLAGS),
                                                         ("runs/scinli-cbow", "runs/c-cbow")),
                checks=(run_dir("runs/c-cbow-stra", "metrics.json"),)),
        "python -m trainer compare runs/scinli-cbow runs/scinli-cbow-stra":
            Run(needs=("c-stra",), sub=(("runs/scinli-cbow", "runs/c-cbow"),), checks=(prints(r"(?i)mcnemar"),)),
        "python -m trainer experiment examples/lineup-cbow-cpu.yaml --output /tmp/lead-exp":
            Run(needs=("lineup-small",), sub=(("examples/lineup-cbow-cpu.yaml", "lineup-small.yaml"),
                                              ("/tmp/lead-exp", "lead-exp")),
                checks=(files("lead-exp/results.md", "lead-exp/baseline"),)),
    },
    "docs/consistency.md": {
        "python -m trainer consistency RUN_DIR --data test.jsonl":
            Run(needs=("cons-run",), sub=(("RUN_DIR", "cons/run-tfidf"), ("test.jsonl", "cons/data/test.jsonl")),
                append=OVERWRITE, checks=(prints(r"MC "),)),
        "python -m trainer consistency RUN_DIR --data test.jsonl --generated gen.jsonl":
            Run(needs=("cons-run",), sub=(("RUN_DIR", "cons/run-tfidf"), ("test.jsonl", "cons/data/test.jsonl"),
                                          ("gen.jsonl", "cons/data/generated.jsonl")), append=OVERWRITE,
                checks=(prints(r"chain_ac"),)),
        "python -m trainer consistency RUN_DIR --data splits/ --split test --label-map contrasting=N reasoning=- "
        "--sentences output/ro/sentences":
            Run(needs=("ro-tfidf", "splits"), sub=(("RUN_DIR", "runs/ro-tfidf"),)),
        "python -m tests.test_consistency /tmp/cons/data":
            Run(sub=(("/tmp/cons", "cons"),), provides="cons-data",
                checks=(files("cons/data/train.jsonl", "cons/data/validation.jsonl", "cons/data/test.jsonl",
                              "cons/data/generated.jsonl"),)),
        "python -m trainer train --model tfidf-lr --train /tmp/cons/data/train.jsonl --validation "
        "/tmp/cons/data/validation.jsonl --test /tmp/cons/data/test.jsonl --output /tmp/cons/run-tfidf":
            Run(needs=("cons-data",), sub=(("/tmp/cons", "cons"),), provides="cons-run",
                checks=(run_dir("cons/run-tfidf"),)),
        "python -m trainer consistency /tmp/cons/run-tfidf --data /tmp/cons/data/test.jsonl "
        "--generated /tmp/cons/data/generated.jsonl":
            Run(needs=("cons-run",), sub=(("/tmp/cons", "cons"),), append=OVERWRITE,
                # the numbers the text quotes for this example
                checks=(prints(r"MC 64\.0% of 150 \(chance 33\.3%\)", r"SC 75\.9% of 468", r"EI 77\.5% of 592"),)),
        "python -m trainer consistency /tmp/cons/run-scinli --sentences /tmp/cons/en/sentences "
        "--label-map contrasting=N reasoning=-":
            Run(needs=("tfidf", "xx"), sub=(("/tmp/cons/run-scinli", "runs/tfidf"),
                                            ("/tmp/cons/en/sentences", "out/xx/sentences")),
                checks=(prints(r"% allowed over constrained items", r"wrote .*consistency/metrics\.json"),)),
    },
    "docs/cleaning.md": {
        ".venv/bin/python benchmarks/clean_profile.py":
            Skip("a benchmark: minutes of CPU on the 206-page English dump (tests/test_wikitext.py checks the cleaning)"),
        ".venv/bin/python samples/build_samples.py":
            Skip("rewrites the bundled samples inside the repository; the --check form below runs"),
        ".venv/bin/python samples/build_samples.py --check": Run(),
    },
    "docs/label-quality.md": {
        ".venv/bin/python benchmarks/gold_sets.py agreement":
            Run(checks=(prints(r"ro: 943 items", r"Cohen's kappa labels 0\.\d+, keep/change 0\.\d+"),)),
        ".venv/bin/python benchmarks/gold_sets.py sample --round extension-2":
            Skip("writes the readers' sheets to /work/gold-ext, outside the repository, after the job over "
                 "every gold-set source (minutes)"),
        ".venv/bin/python benchmarks/gold_sets.py adjudication --round extension-2":
            Skip("reads the readers' verdict files under /work/gold-ext (not in the repository)"),
        ".venv/bin/python benchmarks/gold_sets.py assemble --round extension-2 --lang ro":
            Skip("reads the readers' verdict files under /work/gold-ext and rewrites benchmarks/gold/ro.jsonl"),
        ".venv/bin/python benchmarks/gold_sets.py agreement --round extension-2":
            Skip("the extension-2 round's kappa: meaningful once that round is assembled"),
        ".venv/bin/python benchmarks/label_precision.py --lang ro --ablation --groups":
            Skip("a benchmark: the job five times on the 15 MB of Romanian gold-set sources, minutes each "
                 "(tests/test_label_filters.py checks the filters)"),
    },
    "docs/neardup.md": {
        "python -m trainer stats --data ../shared/data/nli/scinli-train-2k-human.jsonl "
        "../shared/data/nli/scinli-dev.jsonl --premise sentence1 --hypothesis sentence2":
            Run(checks=(prints(r"(?i)near-duplicate"),)),
        ".venv/bin/python benchmarks/neardup_cost.py":
            Skip("a benchmark on the scale benchmark's 20 MB dump (benchmarks/scale.py makes it): minutes"),
        ".venv/bin/python benchmarks/neardup_cost.py --job 20":
            Skip("a benchmark: the whole job twice on the scale benchmark's 20 MB dump, minutes"),
    },
    "docs/pairs.md": {
        "./spark-submit.sh jobs/extract.py --lang ro --stages pairs":
            Run(append="--output out/ro-pairs", checks=(job_output("out/ro-pairs", ("sentences", "pairs", "stats.json")),
                                                         lambda ws, r: not ws.path("out/ro-pairs/splits").exists())),
        "./spark-submit.sh jobs/extract.py --lang en --input enwiki.xml.bz2 --output out/en --pos-filter on "
        "--neutral-ratio 1.0": Run(needs=("enwiki-dump",), provides="out-en", append="--stages pairs",
                                   checks=(job_output("out/en", ("sentences", "pairs", "stats.json")),)),
        ".venv/bin/python jobs/extract.py --lang en --output out/en --start-at pairs --stages pairs --overwrite":
            Run(needs=("out-en",), checks=(files("out/en/pairs", "out/en/sentences"), prints(r"stage pairs"))),
        ".venv/bin/python benchmarks/pairs_throughput.py --size 200":
            Skip("a benchmark: several minutes of CPU on 2 cores"),
        ".venv/bin/python benchmarks/pairs_throughput.py --parts eltec":
            Skip("a benchmark: the 20 ELTeC novels through two stages, minutes"),
        ".venv/bin/python benchmarks/pairs_throughput.py --rounds 3": Skip("a benchmark: three rounds of minutes"),
    },
    "docs/deployment.md": {
        RO: Run(provides="ro", checks=RO_CHECKS),
        "./spark-submit.sh jobs/extract.py --lang path/to/xx.yaml --input my.xml.bz2 --output out/xx":
            Run(needs=("xx-lexicon", "my-dump-2"), sub=(("--output out/xx", "--output out/xx2"),), append=STAGE1,
                checks=(job_output("out/xx2", STAGE1_FILES),)),
        "SPARK_HOME=$(.venv/bin/python -c \"import pyspark, os; print(os.path.dirname(pyspark.__file__))\")":
            Skip(STANDALONE),
        "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 "
        "--webui-port 8080 &": Skip(STANDALONE),
        "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:7077 --cores 1 "
        "--memory 1g &": Skip(STANDALONE),
        "./spark-submit.sh --master spark://127.0.0.1:7077 jobs/extract.py --lang ro --output /shared/disk/out/ro":
            Skip(STANDALONE),
        "kill %1 %2 %3": Skip(STANDALONE),
        "./spark-submit.sh --master yarn jobs/extract.py --lang ro --input hdfs:///dumps/rowiki.xml.bz2 "
        "--output hdfs:///nli/ro": Skip("needs a YARN cluster and HDFS"),
        "docker build -f docker/dataproc-serverless.Dockerfile -t REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 .":
            Skip(CLOUD),
        "docker push REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1": Skip(CLOUD),
        "docker build -f docker/emr-on-eks.Dockerfile --build-arg BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest "
        "-t ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1 .": Skip(CLOUD),
        "docker push ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1": Skip(CLOUD),
        "aws emr-containers start-job-run --virtual-cluster-id VIRTUAL_CLUSTER_ID --name nli-ro "
        "--execution-role-arn arn:aws:iam::ACCOUNT:role/ROLE --release-label emr-7.5.0-latest "
        "--job-driver file://job-driver.json": Skip(CLOUD),
        "gcloud dataproc batches submit pyspark file:///opt/nli/extract.py --region=REGION --version=3.0 "
        "--container-image=REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 -- --lang ro "
        "--input gs://BUCKET/rowiki-latest-pages-articles.xml.bz2 --output gs://BUCKET/out/ro": Skip(CLOUD),
    },
    "docs/evaluation.md": {
        "python -m trainer stress RUN --data FILE_OR_SPLITS [--split test] --lang es [--seed 0] "
        "[--tests negation,spelling] [--output DIR]":
            Run(needs=("ro-tfidf", "splits"), sub=(("RUN", "runs/ro-tfidf"), ("FILE_OR_SPLITS", "splits"),
                                                   ("[--split test]", "--split test"), ("[--seed 0]", "--seed 0"),
                                                   ("[--tests negation,spelling]", "--tests negation,spelling"),
                                                   ("[--output DIR]", "--output stress-es")),
                checks=(files("stress-es/metrics.json", "stress-es/table.md"),)),
        "python -m trainer stress RUN --data snli.jsonl --premise sentence1 --hypothesis sentence2 --label gold_label "
        "--lang en --label-map contradiction=contrasting [--unmapped keep|drop|error]":
            Run(needs=("ro-tfidf", "scinli"), sub=(("RUN", "runs/ro-tfidf"),
                                                   ("[--unmapped keep|drop|error]", "--unmapped drop")),
                checks=(files("runs/ro-tfidf/stress/metrics.json"),)),
        "python -m trainer evaluate runs/ours --data snli.jsonl --premise sentence1 --hypothesis sentence2 "
        "--label gold_label --label-map contradiction=contrasting":
            Run(needs=("ro-tfidf", "scinli"), sub=(("runs/ours", "runs/ro-tfidf"),), checks=(prints(r"macro-F1"),)),
        "python -m trainer evaluate /models/xlm-roberta-large-xnli --data splits/test "
        "--label-map contradiction=contrasting,reasoning=entailment":
            Run(needs=("xnli-checkpoint", "splits"), sub=(("/models/xlm-roberta-large-xnli", "models/xnli"),),
                append=OVERWRITE, checks=(prints(r"macro-F1"),)),
        "python -m trainer evaluate /models/xlm-roberta-large-xnli --data splits/test "
        "--label-map contradiction=contrasting --output xnli-unmapped":
            Run(needs=("xnli-checkpoint", "splits"), sub=(("/models/xlm-roberta-large-xnli", "models/xnli"),),
                checks=(prints(r"macro-F1", r"gold labels the model cannot predict after --label-map: \{'reasoning'"),)),
        "python -m trainer train --train scinli-train-2k-human.jsonl --validation scinli-dev.jsonl "
        "--test scinli-dev-sliced.jsonl --premise sentence1 --hypothesis sentence2 --model MODEL --by premise_length "
        "--by tags --output runs/MODEL":
            Run(needs=("scinli",), sub=(("MODEL", "tfidf-lr"),), provides="tfidf-lr",
                checks=(files("runs/tfidf-lr/slices.md"),)),
        "python -m trainer stress runs/MODEL --data scinli-dev.jsonl --lang en":
            Run(needs=("tfidf-lr",), sub=(("MODEL", "tfidf-lr"),), checks=(files("runs/tfidf-lr/stress/table.md"),)),
        "python -m trainer evaluate runs/tfidf-lr --data scinli-dev-3label.jsonl --premise sentence1 "
        "--hypothesis sentence2 --label-map contradiction=contrasting":
            Run(needs=("tfidf-lr",), checks=(prints(r"scinli-dev-3label: accuracy [0-9.]+, micro-F1 [0-9.]+, "
                                                    r"macro-F1 [0-9.]+ \(n=\d+\)"),)),
    },
    "docs/extraction.md": {
        RO: Run(provides="ro", checks=RO_CHECKS),
        "./spark-submit.sh jobs/extract.py --lang ro --dry-run":
            # the README's first command may have written output/ro already: a dry run refuses it, as a run would
            Run(append=" --output dry-run-out", checks=(prints(r"^\[dry-run\] work units of stage sentences: 1 ", r"^  CPU time: \d+ s - \d+ s",
                               r"^\[dry-run\] nothing was run or written"),)),
        "./spark-submit.sh jobs/extract.py --lang ro --input ~/dumps/rowiki-latest-pages-articles.xml.bz2":
            Run(needs=("home-dump",), env={"HOME": "{ws}/home"}, append="--output out/ro-home " + STAGE1,
                checks=(job_output("out/ro-home", STAGE1_FILES),)),
        "./spark-submit.sh --master 'local[4]' --driver-memory 4g jobs/extract.py --lang es --input books/ "
        "--genre fiction":
            Run(needs=("books",), append="--output out/es-books " + STAGE1, checks=(job_output(
                "out/es-books", STAGE1_FILES), json_file(
                "out/es-books/stats.json", lambda s: s["job"]["corpora"][0]["genre"] == "fiction"))),
        "cd ~/data && /path/to/repo/spark-submit.sh jobs/extract.py --lang en --input rel.xml.bz2 --output out":
            Run(needs=("home-data",), env={"HOME": "{ws}/home"}, sub=(("/path/to/repo", "{repo}"),), append=STAGE1,
                checks=(job_output("home/data/out", STAGE1_FILES), prints(r"\[extract\] done: .*/home/data/out"))),
        ".venv/bin/pip install -e '.[bench]'":
            Skip("installs packages from the package index into the project's .venv"),
        ".venv/bin/python benchmarks/extract_throughput.py --sizes 50,200 --rounds 3":
            Skip("a benchmark: several minutes of CPU on 2 cores (needs the bench extra)"),
    },
    "docs/gpu.md": {
        "torchrun --nproc_per_node 4 -m trainer train --data splits/ --model transformer --pretrained DIR "
        "--output runs/x": Skip(GPU + " (4; tests/test_ddp.py runs torchrun with gloo on CPU)"),
        "python benchmarks/train_throughput.py --size base --pairs 50000 --steps 400 --warmup 50 --batch-size 32 "
        "--rounds 3 --variants all --json results.json": Skip(GPU + " (a base-size benchmark)"),
        "python benchmarks/train_throughput.py --size base --pairs 50000 --steps 400 --warmup 50 --batch-size 32 "
        "--rounds 2 --in-rounds ours_compile --json results.json": Skip(GPU + " (a base-size benchmark)"),
    },
    "docs/splits.md": {
        RO: Run(provides="ro", checks=RO_CHECKS),
        ".venv/bin/python jobs/extract.py --lang ro --start-at splits --overwrite --balance none --split-ratios "
        "0.8,0.1,0.1 --max-eval-per-corpus 15000 --license cc-by-sa-4.0":
            Run(needs=("ro",), checks=(job_output("output/ro"),)),
    },
    "docs/stats.md": {
        "python -m trainer stats --data output/ro/splits": Run(needs=("ro",), checks=(prints(r"^\|"),)),
        "python -m trainer stats --data ../shared/data/nli/scinli-dev.jsonl --premise sentence1 --hypothesis "
        "sentence2 --json": Run(checks=(prints(r'"data"'),)),
        "python -m trainer stats --data train.jsonl dev.jsonl test.jsonl":
            # files with the loader's default columns (the workspace's train.jsonl & co. are SciNLI's)
            Run(needs=("scinli",), sub=(("train.jsonl dev.jsonl test.jsonl", "ph/train.jsonl ph/dev.jsonl ph/test.jsonl"),),
                checks=(prints(r"\btrain\b", r"\bdev\b", r"(?i)leakage"),)),
        "python -m trainer stats --data xnli_ro/ --label-names entailment,neutral,contradiction":
            Run(needs=("scinli",), checks=(prints(r"contradiction"),)),
    },
    "docs/trainer.md": {
        "python -m extractor.encoder build": Skip(ENCODER),
        "python -m extractor.encoder path": Skip(ENCODER),
        "python -m trainer train --train train.jsonl --validation dev.jsonl --test test.jsonl --premise sentence1 "
        "--hypothesis sentence2 --model tfidf-lr --output runs/tfidf":
            Run(needs=("scinli",), provides="tfidf", checks=(run_dir("runs/tfidf"),)),
        "python -m trainer train --data splits/ --model transformer --pretrained "
        "multilingual-e5-small --encoding separate --oversample --seeds 5 --output runs/robert":
            Run(needs=("splits",), sub=(("multilingual-e5-small", "{tiny_bert}"),
                                        ("--seeds 5", "--seeds 2")),
                append="--epochs 1", provides="robert", checks=(run_dir("runs/robert", "seed_0", "seed_1",
                                                                        "seeds.json", "metrics.json"),)),
        "python -m trainer train --data splits/ --model transformer --pretrained DIR --input-mode hypothesis "
        "--output runs/hyp":
            Run(needs=("splits",), sub=(("DIR", "{tiny_bert}"),), append="--epochs 1",
                checks=(run_dir("runs/hyp", "metrics.json"),)),
        "python -m trainer evaluate runs/robert --data other.jsonl":
            Run(needs=("robert", "scinli"), checks=(prints(r"macro-F1"),)),
        "python -m trainer evaluate runs/robert --data xnli-ro/ --split validation --output runs/robert/eval-xnli":
            Run(needs=("robert", "scinli"), checks=(prints(r"macro-F1"),)),
        "python -m trainer predict runs/robert --data unlabelled.jsonl --output labelled.parquet":
            Run(needs=("robert", "scinli"), checks=(files("labelled.parquet"),)),
        "python -m trainer stress runs/robert --data splits/ --lang ro":
            Run(needs=("robert",), checks=(files("runs/robert/stress/table.md"),)),
        "python -m trainer evaluate runs/robert --data splits/test --by corpus --by genre --output runs/robert/slices":
            Run(needs=("robert",), checks=(prints(r"macro-F1"),)),
        "python -m trainer evaluate /models/xnli-checkpoint --data splits/test --label-map contradiction=contrasting":
            Run(needs=("xnli-checkpoint", "splits"), sub=(("/models/xnli-checkpoint", "models/xnli"),),
                append=OVERWRITE, checks=(prints(r"macro-F1"),)),
        "python -m trainer train --train ../shared/data/nli/scinli-train-2k-human.jsonl --validation "
        "../shared/data/nli/scinli-dev.jsonl --test ../shared/data/nli/scinli-dev.jsonl --premise sentence1 "
        "--hypothesis sentence2 --model MODEL --input-mode MODE --output runs/MODEL-MODE":
            Run(sub=(("MODEL", "tfidf-lr"), ("MODE", "hypothesis")),
                checks=(run_dir("runs/tfidf-lr-hypothesis", "metrics.json"),)),
        "python benchmarks/pretrained_baseline.py":
            Skip("a benchmark: fine-tunes a pretrained encoder on 2,000 pairs three ways, minutes of CPU; "
                 "needs the pretrained extra"),
        "python benchmarks/train_throughput.py --size base --pairs 50000 --steps 400 --warmup 50 --batch-size 32 "
        "--rounds 3 --in-rounds ours_compile --variants hf_compile,hf_group_by_length": Skip(GPU + " (a base-size benchmark)"),
        "python benchmarks/train_throughput.py --size tiny --pairs 2000 --steps 12 --warmup 2 --batch-size 16 "
        "--rounds 1": Run(sub=(("--pairs 2000", "--pairs 300"), ("--steps 12 --warmup 2", "--steps 4 --warmup 1"))),
    },
}
