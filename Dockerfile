# Pinned bases: the same image every build. The server runs as an unprivileged user.
FROM python:3.11.11-slim-bookworm
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
WORKDIR /srv/infragraph
COPY pyproject.toml uv.lock README.md ./
COPY app ./app
COPY migrations ./migrations
# a non-editable install: the package carries its migrations, as a wheel would
RUN uv sync --locked --no-dev --no-editable \
    && useradd --system --uid 10001 --home-dir /srv/infragraph infragraph
ENV PATH="/srv/infragraph/.venv/bin:$PATH" INFRAGRAPH_HOME=/tmp/infragraph
USER infragraph
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=2).status != 200)"]
CMD ["infragraph", "serve", "--host", "0.0.0.0", "--port", "8080"]
