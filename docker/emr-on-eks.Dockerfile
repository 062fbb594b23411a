# Custom image for EMR on EKS (EMR 7.x release images: Spark + Java 17 inside). The engine
# goes in as its wheel; the lexicons are package data of the wheel.
# Build from the repository root (pick the base image of your region/release):
#   docker build -f docker/emr-on-eks.Dockerfile \
#     --build-arg BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest -t ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1 .
# Run (StartJobRun): entryPoint local:///usr/local/lib/python3.11/site-packages/jobs/extract.py,
#   entryPointArguments ["--lang","ro","--input","s3://BUCKET/rowiki.xml.bz2","--output","s3a://BUCKET/out/ro"],
#   sparkSubmitParameters "--conf spark.kubernetes.container.image=ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1"

# 1. the wheel
FROM python:3.11-slim AS wheel
COPY pyproject.toml README.md /src/
COPY extractor /src/extractor
COPY jobs /src/jobs
COPY trainer /src/trainer
COPY phrase_lexicons /src/phrase_lexicons
RUN pip wheel --no-cache-dir --no-deps -w /dist /src

# 2. the image
ARG BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest
FROM ${BASE}
USER root
# EMR 7 images are Amazon Linux 2023 with Python 3.9; the project needs 3.10-3.12.
RUN dnf install -y python3.11 python3.11-pip && dnf clean all
ENV PYSPARK_PYTHON=/usr/bin/python3.11 \
    PYSPARK_DRIVER_PYTHON=/usr/bin/python3.11
# The wheel, then the job's requirements without pyspark (the image's Spark is used).
COPY --from=wheel /dist /dist
RUN python3.11 -m pip install --no-cache-dir --no-deps /dist/nli_corpus_engine-*.whl \
 && python3.11 -m pip install --no-cache-dir $(python3.11 -m extractor.spark.executor_env --requirements --driver) \
 && rm -rf /dist
ARG SPACY_MODELS=""
RUN for m in ${SPACY_MODELS}; do python3.11 -m spacy download "$m"; done

# EMR on EKS runs Spark as the hadoop user.
USER hadoop:hadoop
