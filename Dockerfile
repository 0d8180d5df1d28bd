FROM python:3.11-slim
COPY --from=ghcr.io/astral-sh/uv:latest /uv /usr/local/bin/uv
WORKDIR /srv/infragraph
COPY pyproject.toml uv.lock README.md ./
COPY app ./app
COPY migrations ./migrations
RUN uv sync --locked --no-dev
EXPOSE 8080
CMD ["uv", "run", "--no-dev", "infragraph", "serve", "--host", "0.0.0.0", "--port", "8080"]
