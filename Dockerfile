# Build
FROM golang:1.26 AS build
ARG VERSION=devel
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY assets/ assets/
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN for cmd in virt-platform-autopilot virt-platform-autopilot-cluster; do \
      CGO_ENABLED=0 go build -trimpath \
        -ldflags="-s -w -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.version=${VERSION} -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.commit=${COMMIT}" \
        -o /out/$cmd ./cmd/$cmd || exit 1; \
    done

# Run: a static binary on a distroless base, as a non-root user.
FROM gcr.io/distroless/static:nonroot
# Both binaries: the controller runs the cluster one directly; the other
# renders offline (kubectl exec ... virt-platform-autopilot render).
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/virt-platform-autopilot-cluster"]
CMD ["run"]
