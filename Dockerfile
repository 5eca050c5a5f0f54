# syntax=docker/dockerfile:1
# The runtime image of every Reconcilery process: watchers, workers, beat, the Snatch webhook, Flower.
# Built from requirements.lock (hash-pinned, `scripts/lock`); carries neither the dev API server nor
# the stand-ins (those are the reconcilery-embedded distribution). Runs as a non-root numeric user and
# writes nothing outside /tmp, so `readOnlyRootFilesystem: true` with an emptyDir on /tmp works.
#   docker build -t reconcilery:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/reconcilery
COPY requirements.lock ./
RUN /opt/reconcilery/bin/pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY config ./config
COPY fencing ./fencing
COPY informers ./informers
COPY kube ./kube
COPY webhooks ./webhooks
COPY workers ./workers
COPY watchers ./watchers
COPY tasks ./tasks
COPY reconcilery ./reconcilery
# --no-deps: every dependency is already installed from the lock; pip check proves the set complete.
RUN /opt/reconcilery/bin/pip install --no-deps . \
    && /opt/reconcilery/bin/pip check \
    && /opt/reconcilery/bin/python -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ('kubedev', 'standins')))"

FROM ${PYTHON_IMAGE}
COPY --from=build /opt/reconcilery /opt/reconcilery
# HOME and TMPDIR on /tmp: the only writable place (mount an emptyDir there in Kubernetes).
ENV PATH=/opt/reconcilery/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
WORKDIR /tmp
USER 65532:65532
ENTRYPOINT ["reconcilery"]
CMD ["--help"]
