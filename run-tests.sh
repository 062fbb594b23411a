#!/usr/bin/env bash
# ./run-tests.sh [pytest options] [test paths]
# Sets up what is missing (Java >= 17, .venv with torch==2.13.0 first, then
# pip install -e '.[extract,train,test,bench]': bench for the benchmarks the docs tests run) and runs the test suite. Tests that need the
# real data of ../shared/data (or $NLI_SHARED_DATA) are skipped with a reason without it.
#
# Without test paths, the docs run (tests/test_docs_run.py: every command of README.md and
# docs/*.md, each its own subprocess, none of the suite's shared Spark session, cluster or
# Label Studio server) runs in a second pytest process beside the rest of the suite, with
# the same options; its report follows the suite's. NLI_TEST_SERIAL=1 runs one process.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=.ci/setup-env.sh
source "$REPO/.ci/setup-env.sh"
nli_setup "extract,train,test,bench" || exit $?
cd "$REPO"
DOCS_RUN=tests/test_docs_run.py
paths=0
for arg in "$@"; do
  if [ -e "${arg%%::*}" ]; then paths=1; fi
done
set +e
if [ "$paths" -eq 0 ] && [ "${NLI_TEST_SERIAL:-0}" != 1 ]; then
  docs_log="$(mktemp -t nli-docs-run.XXXXXX.log)"
  echo "[run-tests] $DOCS_RUN runs beside the rest of the suite; its report: $docs_log (printed at the end)"
  "$NLI_PY" -m pytest -q -p no:cacheprovider "$@" "$DOCS_RUN" >"$docs_log" 2>&1 &
  docs_pid=$!
  "$NLI_PY" -m pytest -q "$@" --ignore="$DOCS_RUN"
  rc=$?
  wait "$docs_pid"
  docs_rc=$?
  echo
  echo "===== $DOCS_RUN (run beside the suite above; exit $docs_rc)"
  cat "$docs_log"
  # 5: no test collected in that half (e.g. -m "not slow" leaves no docs test): the other
  # half's status stands; 5 only when neither half collected a test
  if [ "$rc" -eq 5 ]; then
    rc=$docs_rc
  elif [ "$rc" -eq 0 ] && [ "$docs_rc" -ne 5 ]; then
    rc=$docs_rc
  fi
else
  "$NLI_PY" -m pytest -q "$@"
  rc=$?
fi
set -e
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no test" >&2
fi
exit "$rc"
