# autocoder worker image: a static Go binary on a minimal base, run as a
# non-root user.
#
#   docker build -t autocoder/autocoder:dev .
#
# Air-gapped sites point the base images at local ones (deploy/build-base-images.sh
# builds both from Debian packages and the host's Go, with no registry):
#
#   docker build --build-arg GO_IMAGE=autocoder/base-golang:1.26 \
#     --build-arg RUNTIME_IMAGE=autocoder/base-debian:bookworm -t autocoder/autocoder:dev .
#
# Modules come from GOPROXY (a build arg). Without any proxy, run `go mod vendor`
# first and build with --build-arg GOPROXY=off: the vendor/ directory is then used.
# The file avoids BuildKit-only syntax so the classic builder works too.

ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
ARG GOPROXY=https://proxy.golang.org,direct
ARG GOSUMDB=sum.golang.org
# auto lets an older Go image fetch the toolchain go.mod asks for.
ARG GOTOOLCHAIN=auto
ENV GOPROXY=${GOPROXY} GOSUMDB=${GOSUMDB} GOTOOLCHAIN=${GOTOOLCHAIN} CGO_ENABLED=0 GOFLAGS=
WORKDIR /src
# Modules get a layer of their own, so a source change does not fetch them again.
COPY go.mod go.sum ./
RUN if [ "$GOPROXY" != off ]; then go mod download; fi
COPY . .
RUN go build -trimpath -ldflags='-s -w' -o /out/autocoder . \
	&& mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
# Numeric, so the runtime image needs no passwd entry (distroless and scratch work too).
ARG UID=10001
# The model providers are reached over HTTPS; slim and distroless bases may lack a CA bundle.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=${UID}:${UID} /out/data /var/lib/autocoder
COPY --from=build /out/autocoder /usr/local/bin/autocoder
ENV HOME=/var/lib/autocoder AUTOCODER_DATA_DIR=/var/lib/autocoder
WORKDIR /var/lib/autocoder
USER ${UID}:${UID}
ENTRYPOINT ["autocoder"]
CMD ["worker"]
