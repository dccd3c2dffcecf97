# Build
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY assets/ assets/
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/virt-platform-autopilot ./cmd/virt-platform-autopilot

# Run: a static binary on a distroless base, as a non-root user.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/virt-platform-autopilot /usr/local/bin/virt-platform-autopilot
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/virt-platform-autopilot"]
CMD ["run"]
