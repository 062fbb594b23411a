# Custom container for Dataproc Serverless for Spark (runtime 2.3+: Spark 4.x, Java 17 are
# provided by the runtime and must NOT be installed here). Build from the repository root:
#   docker build -f docker/dataproc-serverless.Dockerfile -t REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 .
# Run:
#   gcloud dataproc batches submit pyspark jobs/extract.py --region=REGION \
#     --container-image=REGION-docker.pkg.dev/PROJECT/REPO/nli-extract:0.1 \
#     -- --lang ro --input gs://BUCKET/rowiki-latest-pages-articles.xml.bz2 --output gs://BUCKET/out/ro
# (the job file is uploaded by gcloud; extractor/ is importable from the image, so no --py-files)
FROM debian:12-slim

ENV DEBIAN_FRONTEND=noninteractive
# procps and tini are required by Dataproc Serverless; jemalloc is its recommended allocator.
RUN apt-get update \
 && apt-get install -y --no-install-recommends procps tini libjemalloc2 python3 python3-venv python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2

# One Python environment for driver and executors.
ENV VENV=/opt/nli-venv
RUN python3 -m venv "${VENV}"
ENV PATH="${VENV}/bin:${PATH}" \
    PYSPARK_PYTHON=/opt/nli-venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/nli-venv/bin/python

# Dependencies of the extraction job, without pyspark (the runtime brings Spark).
COPY pyproject.toml README.md /opt/nli/
COPY extractor /opt/nli/extractor
COPY jobs /opt/nli/jobs
COPY phrase_lexicons /opt/nli/phrase_lexicons
COPY trainer /opt/nli/trainer
RUN pip install --no-cache-dir "pyyaml>=6.0,<7" "pyarrow>=15,<25" "polars>=1.0,<2" "pandas>=2.2,<3" "numpy>=1.26,<3" \
      "matplotlib>=3.8,<4" "mwparserfromhell>=0.6.6,<0.8" "mwxml>=0.3.3,<0.4" "nltk>=3.8,<4" "spacy>=3.8,<3.9" \
 && pip install --no-cache-dir --no-deps /opt/nli
# spaCy models of the languages you run (the lexicon's spacy_install line), e.g.:
#   RUN python -m spacy download ro_core_news_sm && python -m spacy download es_core_news_sm
ARG SPACY_MODELS=""
RUN for m in ${SPACY_MODELS}; do python -m spacy download "$m"; done

# Dataproc Serverless runs containers as the 'spark' user (uid/gid 1099).
RUN groupadd -g 1099 spark && useradd -u 1099 -g 1099 -d /home/spark -m spark
USER spark
