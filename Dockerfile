# One image for every Reconcilery process (watchers, workers, beat, webhook, flower).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY workers ./workers
COPY watchers ./watchers
COPY tasks ./tasks
COPY kube ./kube
COPY kubedev ./kubedev
COPY standins ./standins
COPY reconcilery ./reconcilery
RUN pip install --no-cache-dir . && useradd --uid 10001 reconcilery
USER 10001
ENTRYPOINT ["reconcilery"]
