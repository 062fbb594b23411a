#!/usr/bin/env bash
# docker/build-local.sh: build the images of docker/ with podman on this machine, with no
# container registry, and check them.
#
#   docker/build-local.sh [--out DIR] [IMAGE ...]      IMAGE: dataproc emr trainer (default: all)
#
# 1. A Debian 12 base image, made once with `debootstrap --variant=minbase bookworm` and
#    `podman import` (localhost/nli-debian:bookworm, kept in podman's storage), and from it a
#    stand-in for python:3.11-slim (docker/local/python.Dockerfile).
# 2. Each image built from its Dockerfile with `podman build --isolation chroot`, passing
#    BASE / WHEEL_BASE (the Dockerfiles' defaults stay the public images). The engine goes in as
#    its wheel (`pip wheel --no-deps` in the first stage). The trainer gets the CPU build of
#    torch 2.13.0 (TORCH_INDEX_URL empty, so pip's own configuration is used) instead of the
#    CUDA build of several GB.
# 3. Checks inside each image (podman create + podman mount + chroot, with the image's user and
#    environment: `podman run` is refused in some sandboxes):
#    - dataproc: a stand-in for the Dataproc runtime is layered on it (Java 17 and pyspark,
#      docker/local/dataproc-runtime.Dockerfile) and the job, as installed from the wheel, is
#      spark-submitted on the bundled Romanian sample as the 'spark' user; the run's splits
#      are copied to --out (default: a new temporary folder) and their row counts printed;
#    - emr: the engine imports and finds its lexicons with the image's python3.11;
#    - trainer: `python -m trainer --help` and a tiny tfidf-lr training on generated pairs.
# 4. A summary: seconds per step and each image's size.
#
# Needs root, podman and debootstrap (`apt-get install -y podman debootstrap`).
# Settings (environment): DEBIAN_MIRROR (default http://deb.debian.org/debian), NLI_TAG (the
# images' tag, default local), NLI_HOST_PIP=0 (do not mount this machine's pip configuration
# into the builds; by default its pip.conf files and the local folders they name, e.g. a folder
# of wheels, are mounted read-only so that pip inside the builds sees what pip here sees),
# TORCH_SPEC (default torch==2.13.0), TORCH_INDEX_URL (default empty).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAG="${NLI_TAG:-local}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEBIAN_BASE=localhost/nli-debian:bookworm
PYTHON_BASE=localhost/nli-python:3.11-bookworm
RUNTIME=localhost/nli-dataproc-runtime:local
OUT=""
IMAGES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    dataproc|emr|trainer) IMAGES+=("$1"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1'; usage: docker/build-local.sh [--out DIR] [dataproc|emr|trainer ...]" >&2; exit 2 ;;
  esac
done
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=(dataproc emr trainer)

log() { echo "[build-local] $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "build-local.sh needs root (debootstrap, podman's storage, chroot); run it with sudo"
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found; install it with: apt-get install -y podman debootstrap"
done

SUMMARY=()
CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT
T_ALL=$(date +%s)
step() {  # step NAME COMMAND...: runs it and records its seconds
  local name="$1" t0 rc
  shift
  t0=$(date +%s)
  log "== $name"
  "$@" && rc=0 || rc=$?
  SUMMARY+=("$(printf '%-44s %5ss' "$name" "$(( $(date +%s) - t0 ))")")
  [ "$rc" = 0 ] || die "step '$name' failed (exit $rc)"
}

# ---- pip inside the builds sees what pip here sees (a local wheel of torch, local indexes, the
# certificate authorities this machine trusts): one pip.conf made from `pip config list` (its
# cert pointing to this machine's CA bundle), mounted read-only with the local folders and
# files it names (only their empty mount points stay in the images).
PIP_MOUNTS=()
host_pip_mounts() {
  [ "${NLI_HOST_PIP:-1}" = 1 ] || return 0
  command -v python3 >/dev/null 2>&1 || return 0
  local conf_dir p seen=" "
  conf_dir="$(mktemp -d /tmp/nli-build-pip.XXXXXX)"
  CLEANUP+=("$conf_dir")
  python3 - "$conf_dir" <<'PY' || return 0
import os, ssl, subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
conf = {}
for line in out.splitlines():  # ':env:.find-links=...', 'global.cert=...', 'install.x=...'
    key, _, value = line.partition("=")
    conf[key.split(".", 1)[-1]] = value.strip("'")
cert = conf.pop("cert", None) or os.environ.get("PIP_CERT") or ssl.get_default_verify_paths().cafile
if cert and os.path.isfile(cert):
    conf["cert"] = "/etc/nli-build-ca.crt"
    open(os.path.join(sys.argv[1], "ca"), "w").write(os.path.realpath(cert))
with open(os.path.join(sys.argv[1], "pip.conf"), "w") as f:
    f.write("[global]\n" + "".join(f"{k} = {v}\n" for k, v in conf.items()))
PY
  PIP_MOUNTS+=(--volume "$conf_dir/pip.conf:/etc/pip.conf:ro")
  [ -f "$conf_dir/ca" ] && PIP_MOUNTS+=(--volume "$(cat "$conf_dir/ca"):/etc/nli-build-ca.crt:ro")
  # the local folders and files it names (find-links, file:// indexes, a constraints file)
  for p in $(sed -n 's/^[a-z-]* = //p' "$conf_dir/pip.conf"); do
    p="${p#file://}"
    case "$p" in /etc/nli-build-ca.crt) continue ;; /*) ;; *) continue ;; esac
    [ "$(basename "$p")" = simple ] && p="$(dirname "$p")"   # an index's files lie beside simple/
    [ -e "$p" ] || continue
    case "$seen" in *" $p "*) continue ;; esac
    PIP_MOUNTS+=(--volume "$p:$p:ro"); seen+="$p "
  done
  log "pip inside the builds: $(tr '\n' ';' < "$conf_dir/pip.conf") with${seen% } mounted"
}

# ---- 1. the Debian base (once; podman's storage keeps it)
make_debian_base() {
  if podman image exists "$DEBIAN_BASE"; then log "$DEBIAN_BASE is there (podman image rm it to make it again)"; return 0; fi
  local root
  root="$(mktemp -d /var/tmp/nli-debootstrap.XXXXXX)"
  log "debootstrap --variant=minbase bookworm $root $MIRROR (a minute or two)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; rm -rf "$root"; die "debootstrap failed (log above)"; }
  # as debian:12-slim: its sources (updates and security too), no docs, man pages or locales
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/*/[!c]* \
         "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
  tar --numeric-owner -C "$root" -c . | podman import - "$DEBIAN_BASE" >/dev/null
  rm -rf "$root" "$root.log"
}

build() {  # build DOCKERFILE IMAGE [podman build args...]
  local file="$1" image="$2"
  shift 2
  podman build --isolation chroot --layers "${PIP_MOUNTS[@]}" \
    --ignorefile "$REPO/docker/local/context.dockerignore" \
    -f "$REPO/docker/$file" -t "$image" "$@" "$REPO"
}

# ---- 3. running commands inside an image without `podman run`
IN_IMAGE_BINDS=()   # "HOST_PATH:PATH_IN_IMAGE" pairs bind-mounted read-only for in_image
IN_IMAGE_ENV=()     # "NAME=VALUE" added to the image's environment
in_image() {  # in_image IMAGE USER COMMAND [COPY_FROM COPY_TO]: sh -c COMMAND as USER, image's env
  local image="$1" user="$2" cmd="$3" from="${4:-}" to="${5:-}" ctr mnt rc=0 workdir home bind
  local -a envs mounted=()
  mapfile -t envs < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$image" | sed '/^$/d')
  workdir="$(podman image inspect --format '{{.Config.WorkingDir}}' "$image")"
  ctr="$(podman create "$image" /bin/true)"
  mnt="$(podman mount "$ctr")"
  mount -t proc proc "$mnt/proc" 2>/dev/null || mount --rbind /proc "$mnt/proc"
  mounted+=("$mnt/proc")
  mount --rbind /dev "$mnt/dev" && mounted+=("$mnt/dev")
  mkdir -p "$mnt${workdir:-/}"   # as `podman run` does for a WORKDIR that the build did not create
  for bind in "${IN_IMAGE_BINDS[@]}"; do
    mkdir -p "$mnt${bind#*:}"
    mount --bind -o ro "${bind%%:*}" "$mnt${bind#*:}" && mounted+=("$mnt${bind#*:}")
  done
  [ "$user" = root ] || user="$user:$(chroot "$mnt" id -gn "$user")"
  home="$(chroot "$mnt" getent passwd "${user%%:*}" | cut -d: -f6)"
  chroot --userspec="$user" "$mnt" /usr/bin/env -i "${envs[@]}" "${IN_IMAGE_ENV[@]}" HOME="${home:-/}" \
    /bin/sh -c "cd '${workdir:-/}' && $cmd" || rc=$?
  if [ "$rc" = 0 ] && [ -n "$from" ]; then mkdir -p "$to" && cp -a "$mnt$from/." "$to/"; fi
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  podman umount "$ctr" >/dev/null
  podman rm "$ctr" >/dev/null
  return "$rc"
}

check_dataproc() {
  local img="localhost/nli-extract-dataproc:$TAG" rt rc=0
  [ -n "$OUT" ] || OUT="$(mktemp -d /tmp/nli-images-check.XXXXXX)"
  rm -rf "$OUT/ro"
  # the runtime's Java and Spark mounted into the image, as Dataproc does; the samples too
  rt="$(podman image mount "$RUNTIME")"
  IN_IMAGE_BINDS=("$rt/usr/lib/jvm:/usr/lib/jvm" "$rt/etc/java-17-openjdk:/etc/java-17-openjdk"
                  "$rt/opt/spark-runtime:/opt/spark-runtime" "$REPO/samples:/opt/nli-samples")
  IN_IMAGE_ENV=(JAVA_HOME=/usr/lib/jvm/runtime-java PYTHONPATH=/opt/spark-runtime/python SPARK_LOCAL_IP=127.0.0.1)
  # what Dataproc runs: spark-submit of the job file the docs name (/opt/nli/extract.py, a link
  # to the wheel's copy) with the image's Python, as the image's user ('spark'); then the row
  # count and labels of each split
  in_image "$img" spark \
    'job=$(python -c "import jobs.extract as j; print(j.__file__)") && echo "job file: $job" &&
     [ "$(readlink -f /opt/nli/extract.py)" = "$job" ] &&
     /opt/spark-runtime/python/pyspark/bin/spark-submit --master "local[2]" --conf spark.ui.enabled=false \
       /opt/nli/extract.py --lang ro --input /opt/nli-samples/ro --output /tmp/nli-out/ro >/tmp/job.log 2>&1; rc=$?;
     grep -v " INFO " /tmp/job.log; [ "$rc" = 0 ] &&
     python - <<"PY"
import collections, pathlib, pyarrow.parquet as pq
splits = pathlib.Path("/tmp/nli-out/ro/splits")
for split in ("train", "validation", "test"):
    files = sorted((splits / split).glob("**/*.parquet"))
    labels = collections.Counter(l for f in files for l in pq.read_table(f, columns=["label"]).column("label").to_pylist())
    print(f"split {split}: {len(files)} Parquet file(s), {sum(labels.values())} pairs, labels {dict(sorted(labels.items()))}")
PY' /tmp/nli-out/ro "$OUT/ro" || rc=$?
  IN_IMAGE_BINDS=(); IN_IMAGE_ENV=()
  podman image umount "$RUNTIME" >/dev/null || true
  [ "$rc" = 0 ] && log "the in-image run's output: $OUT/ro"
  return "$rc"
}

check_emr() {
  in_image "localhost/nli-extract-emr:$TAG" hadoop \
    'python3.11 -c "import jobs.extract as j, extractor; from extractor.lexicon.lexicon import available_languages; print(j.__file__); print(available_languages())" &&
     echo "entry point: /opt/nli/extract.py -> $(readlink -f /opt/nli/extract.py)" && test -f /opt/nli/extract.py &&
     python3.11 -m jobs.extract --help | head -3'
}

check_trainer() {
  in_image "localhost/nli-trainer:$TAG" root \
    'python -m trainer --help | head -5 &&
     python -c "import torch; print(\"torch\", torch.__version__, \"cuda:\", torch.version.cuda)" &&
     mkdir -p /tmp/tiny && python - <<"PY" &&
import json, random
random.seed(0)
words = {"entailment": "therefore", "contrasting": "however", "reasoning": "because", "neutral": "meanwhile"}
for split, n in (("train", 80), ("validation", 20), ("test", 20)):
    with open(f"/tmp/tiny/{split}.jsonl", "w") as f:
        for i in range(n):
            label = list(words)[i % 4]
            f.write(json.dumps({"pair_id": f"{split}-{i}", "premise": f"the river {i} rose {random.random():.3f}",
                                "hypothesis": f"{words[label]} the town flooded {i}", "label": label}) + "\n")
PY
     python -m trainer train --train /tmp/tiny/train.jsonl --validation /tmp/tiny/validation.jsonl \
       --test /tmp/tiny/test.jsonl --model tfidf-lr --output /tmp/tiny-run --no-progress >/tmp/train.log 2>&1;
     rc=$?; tail -n 8 /tmp/train.log; [ "$rc" = 0 ] && ls /tmp/tiny-run'
}

pyspark_spec() {  # the engine's pyspark requirement, from pyproject.toml (without extras)
  sed -n 's/^ *"\(pyspark\)\[[a-z,]*\]\([^"]*\)".*/\1\2/p' "$REPO/pyproject.toml" | head -n 1
}

image_size() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }

host_pip_mounts
step "debian base (debootstrap + podman import)" make_debian_base
step "python base (stand-in for python:3.11-slim)" build local/python.Dockerfile "$PYTHON_BASE" --build-arg BASE="$DEBIAN_BASE"
for name in "${IMAGES[@]}"; do
  case "$name" in
    dataproc)
      step "build nli-extract-dataproc" build dataproc-serverless.Dockerfile "localhost/nli-extract-dataproc:$TAG" \
        --build-arg BASE="$DEBIAN_BASE" --build-arg WHEEL_BASE="$PYTHON_BASE" --build-arg POS_LANGS="${POS_LANGS-ro}"
      step "build the Dataproc runtime stand-in" build local/dataproc-runtime.Dockerfile "$RUNTIME" \
        --build-arg BASE="$PYTHON_BASE" --build-arg PYSPARK_SPEC="$(pyspark_spec)"
      step "dataproc: job on the ro sample in the image" check_dataproc ;;
    emr)
      step "build nli-extract-emr" build emr-on-eks.Dockerfile "localhost/nli-extract-emr:$TAG" \
        --build-arg BASE="$DEBIAN_BASE" --build-arg WHEEL_BASE="$PYTHON_BASE"
      step "emr: engine imports, lexicons found" check_emr ;;
    trainer)
      step "build nli-trainer (CPU torch)" build trainer-gpu.Dockerfile "localhost/nli-trainer:$TAG" \
        --build-arg BASE="$DEBIAN_BASE" --build-arg WHEEL_BASE="$PYTHON_BASE" \
        --build-arg TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}" --build-arg TORCH_INDEX_URL="${TORCH_INDEX_URL:-}"
      step "trainer: --help, tiny tfidf-lr run" check_trainer ;;
  esac
done

echo "== build-local.sh summary ($(( $(date +%s) - T_ALL )) s in all)"
printf '%s\n' "${SUMMARY[@]}"
for image in "$DEBIAN_BASE" "$PYTHON_BASE" "$RUNTIME" localhost/nli-extract-dataproc:"$TAG" \
             localhost/nli-extract-emr:"$TAG" localhost/nli-trainer:"$TAG"; do
  podman image exists "$image" && printf '%-52s %s\n' "$image" "$(image_size "$image")"
done
exit 0
