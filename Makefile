# virt-platform-autopilot

BIN        ?= $(CURDIR)/bin
ENVTEST_BIN = $(BIN)/envtest
GO         ?= go
GOLANGCI_LINT_VERSION ?= v2.15.0

.PHONY: all build test unit integration envtest lint verify generate bench fuzz fmt vet clean

all: build

## build: the binary, into bin/virt-platform-autopilot
build:
	$(GO) build -o $(BIN)/virt-platform-autopilot ./cmd/virt-platform-autopilot

## envtest: build kube-apiserver and etcd from Go modules (once, cached); prints their folder last
envtest:
	@hack/envtest.sh "$(ENVTEST_BIN)"

## test: unit and integration tests against a real kube-apiserver + etcd
test: envtest
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" $(GO) test ./... -count=1

## unit: unit tests only (no API server)
unit:
	$(GO) test $$($(GO) list ./... | grep -v /test/) -count=1

## fuzz: run each fuzz target briefly (FUZZTIME, default 5s); a crash is saved under testdata/fuzz and becomes a regression test
FUZZTIME ?= 5s
FUZZ_TARGETS = FuzzPatch:./pkg/overrides FuzzIgnoreFields:./pkg/overrides FuzzParse:./pkg/exclusion FuzzFieldsV1:./pkg/managedfields FuzzOptInAnnotations:./pkg/engine
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} ($(FUZZTIME))"; \
		$(GO) test $${t#*:} -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME); \
	done

## bench: benchmarks
bench:
	$(GO) test ./... -run '^$$' -bench . -benchmem

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

## lint: gofmt, go vet and golangci-lint (.golangci.yml)
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@hack/golangci-lint.sh "$(BIN)" "$(GOLANGCI_LINT_VERSION)" run ./...

## generate: docs/assets.md, the README asset table and config/rbac/role.yaml, from the catalog
generate:
	$(GO) run ./cmd/docs-gen
	$(GO) run ./cmd/rbac-gen

## verify: generated files are up to date, code is formatted and vetted
verify: vet
	@$(MAKE) --no-print-directory generate
	@git diff --exit-code -- docs/assets.md README.md config/rbac/role.yaml || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

clean:
	rm -rf $(BIN)
