# Custom image for EMR on EKS (EMR 7.x release images: Spark + Java 17 inside).
# Build from the repository root (pick the base image of your region/release):
#   docker build -f docker/emr-on-eks.Dockerfile \
#     --build-arg BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest -t ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1 .
# Run (StartJobRun): entryPoint local:///opt/nli/jobs/extract.py,
#   entryPointArguments ["--lang","ro","--input","s3://BUCKET/rowiki.xml.bz2","--output","s3a://BUCKET/out/ro"],
#   sparkSubmitParameters "--conf spark.kubernetes.container.image=ACCOUNT.dkr.ecr.REGION.amazonaws.com/nli-extract:0.1"
ARG BASE=public.ecr.aws/emr-on-eks/spark/emr-7.5.0:latest
FROM ${BASE}

USER root
# EMR 7 images are Amazon Linux 2023 with Python 3.9; the project needs 3.10-3.12.
RUN dnf install -y python3.11 python3.11-pip && dnf clean all
ENV PYSPARK_PYTHON=/usr/bin/python3.11 \
    PYSPARK_DRIVER_PYTHON=/usr/bin/python3.11

COPY pyproject.toml README.md /opt/nli/
COPY extractor /opt/nli/extractor
COPY jobs /opt/nli/jobs
COPY phrase_lexicons /opt/nli/phrase_lexicons
COPY trainer /opt/nli/trainer
# pyspark itself comes with the image's Spark: install only the job's libraries.
RUN python3.11 -m pip install --no-cache-dir "pyyaml>=6.0,<7" "pyarrow>=15,<25" "polars>=1.0,<2" "pandas>=2.2,<3" \
      "numpy>=1.26,<3" "matplotlib>=3.8,<4" "mwparserfromhell>=0.6.6,<0.8" "mwxml>=0.3.3,<0.4" "nltk>=3.8,<4" \
      "spacy>=3.8,<3.9" \
 && python3.11 -m pip install --no-cache-dir --no-deps /opt/nli
ARG SPACY_MODELS=""
RUN for m in ${SPACY_MODELS}; do python3.11 -m spacy download "$m"; done

# EMR on EKS runs Spark as the hadoop user.
USER hadoop:hadoop
