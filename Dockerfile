# The worker and query service image (used by docker-compose.yml).
FROM python:3.11-slim
RUN pip install --no-cache-dir uv
WORKDIR /app
COPY requirements.lock pyproject.toml README.md ./
RUN uv pip install --system --no-cache -r requirements.lock
COPY simplemem simplemem
RUN uv pip install --system --no-cache --no-deps .
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 SIMPLEMEM_MODE=services
CMD ["simplemem", "--help"]
