# The torch trainer on a GPU host (CUDA 12.8 wheels of torch). Build from the repository root:
#   docker build -f docker/trainer-gpu.Dockerfile -t nli-trainer:0.1 .
# Run (the splits folder mounted at /data, runs written to /runs):
#   docker run --gpus all -v $PWD/output/ro/splits:/data:ro -v $PWD/runs:/runs nli-trainer:0.1 \
#     train --data /data --model transformer --pretrained /models/bert-base-romanian --out /runs/ro-bert
#   (with -v ~/models:/models:ro holding the checkpoint)
# 1. the wheel
FROM python:3.11-slim AS wheel
COPY pyproject.toml README.md /src/
COPY extractor /src/extractor
COPY jobs /src/jobs
COPY trainer /src/trainer
COPY phrase_lexicons /src/phrase_lexicons
RUN pip wheel --no-cache-dir --no-deps -w /dist /src

# 2. the image
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:${PATH}

# torch first, from the CUDA index, so that the train extra does not pull a CPU build.
ARG TORCH_SPEC="torch==2.13.0"
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
RUN pip install --index-url "${TORCH_INDEX_URL}" "${TORCH_SPEC}"

# The engine's wheel with the train extra (the trainer never imports Spark).
COPY --from=wheel /dist /dist
RUN pip install "$(ls /dist/nli_corpus_engine-*.whl)[train]" && rm -rf /dist

# Models are not downloaded at run time: mount a local model folder (e.g. -v ~/models:/models)
# and pass --pretrained /models/NAME, or bake one in here with COPY.
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /runs
ENTRYPOINT ["python", "-m", "trainer"]
CMD ["--help"]
