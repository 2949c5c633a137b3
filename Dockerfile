# Conformal Judge API image: `docker build -t conformal-judge .` then
# `docker run -p 8000:8000 -e REDIS_URL=redis://redis:6379/0 conformal-judge`.
# Same entry point as `make serve` (python -m service); settings come from the environment (docs/operations.md).
# The same image runs the job workers (`python -m service.worker`): compose.yaml runs the API, two workers and Redis.

# Build stage: `pip install .` (no extras) into a virtualenv, so the runtime image carries no build tooling, no
# sources, and neither the offline module nor its extras (matplotlib, tqdm): it serves, it does not calibrate.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
WORKDIR /src
# Metadata first, then the packages the service needs (artifact*, calibration*, judges*, service*: every package
# of pyproject.toml but offline*; the artifact JSON files and judges.example.json come along as package data).
# offline/ is not copied, so setuptools finds no offline* (tests/deploy/test_compose.py checks the list).
COPY pyproject.toml README.md ./
COPY artifact ./artifact
COPY calibration ./calibration
COPY judges ./judges
COPY service ./service
RUN /opt/venv/bin/pip install . \
    && ! /opt/venv/bin/python -c "import matplotlib" 2>/dev/null \
    && ! /opt/venv/bin/python -c "import offline" 2>/dev/null

FROM python:3.11-slim AS runtime
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    WORKERS=2 \
    HEADER_TIMEOUT_S=10 \
    BODY_TIMEOUT_S=30 \
    KEEPALIVE_TIMEOUT_S=5
# A fixed, unprivileged uid/gid so mounted files (JUDGES_FILE, THRESHOLDS_PATH) can be permissioned for it.
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home --shell /usr/sbin/nologin app
# The mount point of activated artifacts (ARTIFACTS_DIR in compose.yaml), owned by the app user: a named volume
# mounted there starts with this directory's owner, so the service can write to it.
RUN install -d -o app -g app /var/lib/conformal-judge/artifacts
COPY --from=build /opt/venv /opt/venv
# Run from an empty directory so `python -m service` imports the installed package, not a stray checkout.
WORKDIR /home/app
USER app:app
EXPOSE 8000
# urllib raises on connection errors and on any non-2xx answer, so the exit status is the health verdict.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4)"]
CMD ["python", "-m", "service"]
