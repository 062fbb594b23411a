# The torch trainer on a GPU host (CUDA 12.8 wheels of torch). Build from the repository root:
#   docker build -f docker/trainer-gpu.Dockerfile -t nli-trainer:0.1 .
# Run (the splits folder mounted at /data, runs written to /runs):
#   docker run --gpus all -v $PWD/output/ro/splits:/data:ro -v $PWD/runs:/runs nli-trainer:0.1 \
#     train --data /data --model transformer --pretrained /models/bert-base-romanian --output /runs/ro-bert
#   (with -v ~/models:/models:ro holding the checkpoint)
# Local build and check with podman, from a debootstrap-made Debian base and the CPU build of
# torch: docker/build-local.sh (it sets BASE, WHEEL_BASE, TORCH_SPEC and TORCH_INDEX_URL; the
# defaults below are the public CUDA image and the CUDA 12.8 build of torch).
ARG BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
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
 && mkdir /reqs && python -c "from extractor.spark.executor_env import requirements; print('\\n'.join(requirements(extras=('train',), driver=True)))" > /reqs/requirements.txt

# 2. the image
FROM ${BASE}

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:${PATH}

# torch first, from the CUDA index, so that the train extra does not pull another build.
# An empty TORCH_INDEX_URL means pip's own configuration (docker/build-local.sh: this machine's
# CPU wheel of torch 2.13.0).
ARG TORCH_SPEC="torch==2.13.0"
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
RUN pip install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "${TORCH_SPEC}"

# The engine's requirements with the train extra (the trainer never imports Spark; torch is
# there already), then its wheel.
COPY --from=wheel /reqs/requirements.txt /tmp/nli-requirements.txt
RUN pip install -r /tmp/nli-requirements.txt
COPY --from=wheel /dist /dist
RUN pip install --no-deps /dist/nli_corpus_engine-*.whl && rm -rf /dist

# Models are not downloaded at run time: mount a local model folder (e.g. -v ~/models:/models)
# and pass --pretrained /models/NAME, or bake one in here with COPY.
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /runs
ENTRYPOINT ["python", "-m", "trainer"]
CMD ["--help"]
