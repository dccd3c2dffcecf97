# The console plugin, from its lockfile.
FROM node:20 AS console
WORKDIR /src/console-plugin
COPY console-plugin/package.json console-plugin/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY console-plugin/ ./
RUN npm run build

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
# The console plugin the controller serves (--console-plugin-dir).
COPY --from=console /src/console-plugin/dist/ /console-plugin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/virt-platform-autopilot-cluster"]
CMD ["run"]
