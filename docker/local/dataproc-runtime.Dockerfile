# What the Dataproc Serverless runtime mounts into a custom container when a batch starts, for
# the local check of docker/build-local.sh: Java 17 (/usr/lib/jvm, /etc/java-17-openjdk) and
# Spark (here pyspark, at the version the engine asks for, in /opt/spark-runtime/python). The
# image itself (docker/dataproc-serverless.Dockerfile) must not install them; build-local.sh
# bind-mounts these folders into it, as the runtime does, so this image is built once and does
# not change with the engine.
ARG BASE=localhost/nli-python:3.11-bookworm
FROM ${BASE}
RUN apt-get update \
 && mkdir -p /usr/share/man/man1 \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f /usr/bin/java)")")" /usr/lib/jvm/runtime-java
ARG PYSPARK_SPEC="pyspark"
RUN pip install --no-cache-dir --target /opt/spark-runtime/python "${PYSPARK_SPEC}"
