# autocoder worker image: a static Go binary on a minimal base, run as a
# non-root user.
#
#   docker build -t autocoder/autocoder:dev .
#
# Air-gapped sites point the base images at local ones; deploy/build-base-images.sh
# builds both from Debian packages and the host's Go, with no registry:
#
#   docker build --build-arg GO_IMAGE=autocoder/base-golang:1.26 \
#     --build-arg RUNTIME_IMAGE=autocoder/base-debian:bookworm -t autocoder/autocoder:dev .
#
# Modules come from GOPROXY (a build arg; an internal proxy works too). With no
# proxy at all, run `go mod vendor` first and build with --build-arg GOPROXY=off:
# the vendor/ directory is then used. The file sticks to what the classic
# builder understands, and keeps few instructions: each is a layer.

ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
ARG GOPROXY=https://proxy.golang.org,direct
# PREBUILT names a directory of the build context holding the two programs
# already compiled, static (deploy/build-base-images.sh --app compiles them on
# the host, with its build cache); empty, they are compiled here.
ARG PREBUILT=
# Modules get a layer of their own, so a source change does not fetch them again.
COPY go.mod go.sum /src/
RUN cd /src && if [ "$GOPROXY" != off ] && [ -z "$PREBUILT" ]; then go mod download; fi
COPY . /src/
# GOTOOLCHAIN=auto lets an older Go image fetch the toolchain go.mod asks for.
# /out is the runtime image's tree: the binary, the egress forwarder sandboxes
# mount, and the CA bundle (model
# providers are reached over HTTPS; slim and distroless bases may lack one).
RUN cd /src \
	&& if [ -n "$PREBUILT" ]; then \
		install -D -m 755 "$PREBUILT/autocoder" /out/usr/local/bin/autocoder \
		&& install -D -m 755 "$PREBUILT/egress-forward" /out/usr/local/libexec/autocoder/egress-forward; \
	else \
		CGO_ENABLED=0 GOTOOLCHAIN=auto GOFLAGS= go build -trimpath -ldflags='-s -w' -o /out/usr/local/bin/autocoder . \
		&& CGO_ENABLED=0 GOTOOLCHAIN=auto GOFLAGS= go build -trimpath -ldflags='-s -w' -o /out/usr/local/libexec/autocoder/egress-forward ./sandbox/cmd/egress-forward; \
	fi \
	&& mkdir -p /out/etc/ssl/certs /data \
	&& cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/ /
# The user is numeric, so the base needs no passwd entry (distroless and
# scratch work too); it owns only the data directory (SQLite when no
# AUTOCODER_DATABASE_URL is set).
COPY --from=build --chown=10001:10001 /data /var/lib/autocoder
ENV HOME=/var/lib/autocoder AUTOCODER_DATA_DIR=/var/lib/autocoder \
	AUTOCODER_SANDBOX_FORWARDER=/usr/local/libexec/autocoder/egress-forward
USER 10001:10001
WORKDIR /var/lib/autocoder
ENTRYPOINT ["autocoder"]
CMD ["worker"]
