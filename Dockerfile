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
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.version=${VERSION} -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.commit=${COMMIT}" \
      -o /out/virt-platform-autopilot ./cmd/virt-platform-autopilot

# Run: a static binary on a distroless base, as a non-root user.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/virt-platform-autopilot /usr/local/bin/virt-platform-autopilot
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/virt-platform-autopilot"]
CMD ["run"]
