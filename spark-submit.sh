#!/usr/bin/env bash
# ./spark-submit.sh [spark-submit options] jobs/extract.py --lang ro [job options]
#
# On first use: checks Java >= 17 (installs it with apt-get when run as root), creates
# .venv and installs the project into it. Then runs spark-submit from that environment
# with extractor/ and phrase_lexicons/ zipped for the executors (--py-files), in local
# mode on every core unless you give --master. Every other argument goes to spark-submit.
# The job's --help and --dry-run start no Spark: plain Python answers them (no JVM).
#   ./spark-submit.sh --setup-only          only set up (.venv, Java)
#   NLI_EXTRAS=extract,train,test ./spark-submit.sh --setup-only
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=.ci/setup-env.sh
source "$REPO/.ci/setup-env.sh"
nli_setup "${NLI_EXTRAS:-extract}" || exit $?
if [ "${1:-}" = "--setup-only" ]; then
  echo "[setup] ready: $NLI_PY; activate with: source ${NLI_VENV:-$REPO/.venv}/bin/activate" >&2
  exit 0
fi
if [ $# -eq 0 ]; then
  echo "usage: ./spark-submit.sh [spark-submit options] jobs/extract.py --lang LANG [job options]" >&2
  exit 2
fi
# Paths are the user's: spark-submit runs in the directory this script was run in, so the
# job's relative --input/--output/--manifest/... mean what they say (the job makes them
# absolute for the tasks, extractor/job/paths.py). The job script is looked for here, then in
# the repository (/repo/spark-submit.sh jobs/extract.py from any folder). With
# --deploy-mode cluster a relative job path is refused: the driver runs on a cluster node.
ARGS_FILE="$(mktemp "${TMPDIR:-/tmp}/nli-submit-args.XXXXXX")"
(cd "$REPO" && "$NLI_PY" -m extractor.job.paths submit "$REPO" "$PWD" -- "$@") > "$ARGS_FILE" || { rm -f "$ARGS_FILE"; exit 2; }
SUBMIT_ARGS=()
while IFS= read -r -d '' arg; do SUBMIT_ARGS+=("$arg"); done < "$ARGS_FILE"
rm -f "$ARGS_FILE"
set -- "${SUBMIT_ARGS[@]}"
# The job's --help and --dry-run start no Spark: plain Python answers them, without a JVM
# (extractor/job/paths.py `plain_python_args`; spark-submit's --master becomes the job's).
if [ "${1:-}" = "--plain-python" ]; then
  shift
  exec "$NLI_PY" "$@"
fi

# First use for a language: install the first pip-installable spaCy model of its lexicon
# (spacy_models); otherwise the job warns (--pos-filter auto) or fails (on).
LANG_ARG=""
prev=""
for arg in "$@"; do
  case "$arg" in --lang=*) LANG_ARG="${arg#--lang=}" ;; esac
  [ "$prev" = "--lang" ] && LANG_ARG="$arg"
  prev="$arg"
done
nli_setup_spacy_model "$LANG_ARG"

# Executors on a cluster import the library from this zip; lexicons travel inside it too
# (the driver loads them, executors get the loaded Lexicon pickled).
DEPS="$REPO/.spark-deps"
mkdir -p "$DEPS"
"$NLI_PY" - "$REPO" "$DEPS/nli_extractor.zip" <<'PY'
import sys, zipfile
from pathlib import Path
repo, target = Path(sys.argv[1]), Path(sys.argv[2])
files = sorted(p for d in ("extractor", "phrase_lexicons") for p in (repo / d).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".yaml", ".md", ".json", ".tsv"))
tmp = target.with_suffix(".tmp")
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
    for p in files:
        info = zipfile.ZipInfo(str(p.relative_to(repo)), date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, p.read_bytes())
tmp.replace(target)
PY

MASTER_ARGS=(--master "local[*]")
LOCAL=1
TUNING=startup
CLUSTER_DRIVER=0
prev=""
for arg in "$@"; do
  case "$arg" in
    --master=local*) MASTER_ARGS=() ;;
    --master|--master=*) MASTER_ARGS=(); LOCAL=0 ;;
    --deploy-mode=cluster) CLUSTER_DRIVER=1 ;;
    --driver-java-options|--driver-java-options=*|--conf=spark.driver.extraJavaOptions=*) TUNING=yours ;;
    --jvm-tuning=*) TUNING="${arg#--jvm-tuning=}" ;;
  esac
  [ "$prev" = "--master" ] && case "$arg" in local*) LOCAL=1 ;; esac
  [ "$prev" = "--deploy-mode" ] && [ "$arg" = cluster ] && CLUSTER_DRIVER=1
  [ "$prev" = "--jvm-tuning" ] && TUNING="$arg"
  [ "$prev" = "--conf" ] && case "$arg" in spark.driver.extraJavaOptions=*) TUNING=yours ;; esac
  prev="$arg"
done
# Local mode: the driver JVM is the executor; start it for short jobs (C1 JIT and a
# class-data archive, written at the exit of the first run). See extractor/spark/jvm.py.
JVM_ARGS=()
if [ "$LOCAL" = 1 ] && [ "$TUNING" = startup ]; then
  opts="$(cd "$REPO" && "$NLI_PY" -m extractor.spark.jvm --tuning startup --for-first-run)"
  [ -n "$opts" ] && JVM_ARGS=(--driver-java-options "$opts")
fi
# Python on the executors. Local mode: this machine's .venv. Any other master: a packed copy
# of the engine's dependencies (venv-pack, cached in .spark-deps/), shipped with --archives
# and unpacked by every executor, so the nodes' own Python needs nothing installed
# (NLI_PACK_ENV=0: the nodes already have everything, e.g. the images of docker/;
# NLI_PACK_ENV=1: pack in local mode too). See extractor/spark/executor_env.py.
PY_ARGS=(--conf "spark.pyspark.python=$PYSPARK_PYTHON")
PACK="${NLI_PACK_ENV:-}"
[ -z "$PACK" ] && { [ "$LOCAL" = 1 ] && PACK=0 || PACK=1; }
if [ "$PACK" = 1 ]; then
  ENV_ARCHIVE="$(cd "$REPO" && "$NLI_PY" -m extractor.spark.executor_env --dir "$DEPS" ${LANG_ARG:+--lang "$LANG_ARG"})" || exit 2
  DRIVER_PY="$NLI_PY"
  [ "$CLUSTER_DRIVER" = 1 ] && DRIVER_PY=./environment/bin/python
  PY_ARGS=(--archives "$ENV_ARCHIVE#environment" --conf "spark.pyspark.python=./environment/bin/python"
           --conf "spark.pyspark.driver.python=$DRIVER_PY")
elif [ "$LOCAL" = 0 ]; then
  PY_ARGS=()  # the nodes' own Python (PYSPARK_PYTHON of their environment)
fi
SPARK_SUBMIT="${NLI_VENV:-$REPO/.venv}/bin/spark-submit"
exec "$SPARK_SUBMIT" "${MASTER_ARGS[@]}" ${JVM_ARGS[@]+"${JVM_ARGS[@]}"} ${PY_ARGS[@]+"${PY_ARGS[@]}"} \
  --conf "spark.log.level=${NLI_SPARK_LOG_LEVEL:-WARN}" \
  --py-files "$DEPS/nli_extractor.zip" "$@"
