# Stands in for python:3.11-slim in the images' first stage (`pip wheel`) when
# docker/build-local.sh builds them without a registry: Debian 12's Python 3.11 in a virtual
# environment whose python and pip come first on PATH, as in the public image.
ARG BASE=localhost/nli-debian:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /usr/local/python
ENV PATH=/usr/local/python/bin:${PATH}
