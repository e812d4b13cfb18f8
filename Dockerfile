# acp-proxy in a container. The image's default command is the demo:
#   docker build -t acp-proxy . && docker run --rm acp-proxy
# Wrapping an agent installed in a derived image, recordings kept on the host:
#   docker run -i --rm -v "$HOME/.local/state/acp-proxy:/data" my-image record -- my-agent
FROM python:3.11-slim
COPY pyproject.toml README.md /build/
COPY proxy /build/proxy
RUN pip install --no-cache-dir /build && rm -rf /build
ENV ACP_PROXY_DB=/data/recordings.sqlite
VOLUME ["/data"]
ENTRYPOINT ["acp-proxy"]
CMD ["demo"]
