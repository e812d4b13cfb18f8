# syntax=docker/dockerfile:1
# acp-proxy in a container; the image's default command is the demo:
#   docker build -t acp-proxy . && docker run --rm acp-proxy
# Wrapping an agent, and serving the inspector: README.md, "Run it in a container".
#
# The wheel is built in one stage and only the wheel reaches the image: no source tree,
# no build tools. tests/packaging/test_dockerfile.py replays these steps without an engine.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md MANIFEST.in ./
COPY acp_proxy ./acp_proxy
RUN pip wheel --no-cache-dir --no-deps --wheel-dir dist .

FROM python:3.11-slim
RUN --mount=type=bind,from=build,source=/src/dist,target=/wheels \
    pip install --no-cache-dir /wheels/acp_proxy-*.whl
# recordings hold secrets: /data is the unprivileged user's own, and no one else's
RUN useradd --create-home --uid 10001 acp && install -d -m 0700 -o acp -g acp /data
USER acp
WORKDIR /home/acp
ENV ACP_PROXY_DB=/data/recordings.sqlite
VOLUME ["/data"]
ENTRYPOINT ["acp-proxy"]
CMD ["demo"]
