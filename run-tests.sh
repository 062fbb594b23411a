#!/usr/bin/env bash
# ./run-tests.sh [pytest options]
# Sets up what is missing (Java >= 17, .venv with torch==2.13.0 first, then
# pip install -e '.[extract,train,test,bench]': bench for the benchmarks the docs tests run) and runs the test suite. Tests that need the
# real data of ../shared/data (or $NLI_SHARED_DATA) are skipped with a reason without it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=.ci/setup-env.sh
source "$REPO/.ci/setup-env.sh"
nli_setup "extract,train,test,bench" || exit $?
cd "$REPO"
set +e
"$NLI_PY" -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no test" >&2
fi
exit "$rc"
