# virt-platform-autopilot

BIN        ?= $(CURDIR)/bin
ENVTEST_BIN = $(BIN)/envtest
TOOLS_BIN   = $(BIN)/tools
GO         ?= go
GOLANGCI_LINT_VERSION ?= v2.15.0

# The image 'docker-build', 'docker-push' and 'deploy' use.
IMG ?= quay.io/kubevirt/virt-platform-autopilot:latest
# podman when installed, else docker.
CONTAINER_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
# The local image and kind cluster of the local-development targets.
LOCAL_IMG    ?= localhost/virt-platform-autopilot:dev
KIND_CLUSTER ?= virt-platform-autopilot
DEPLOY_NS     = virt-platform-autopilot-system

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  = -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.version=$(VERSION) -X github.com/kubevirt/virt-platform-autopilot/pkg/cli.commit=$(COMMIT)

.PHONY: console-plugin screenshots all build run test test-unit unit test-integration envtest kubelet-check kustomize lint verify generate bench fuzz fmt vet clean \
	demo demo-stop image bundle catalog docker-build docker-push deploy undeploy kind-setup kind-delete deploy-local logs-local redeploy-local dev-cycle

all: build

## build: the binaries, into bin/ (version and commit stamped): virt-platform-autopilot (offline, the one to call) and virt-platform-autopilot-cluster (run, render against a cluster; the first hands those to it); and the console plugin
build: console-plugin
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/virt-platform-autopilot ./cmd/virt-platform-autopilot
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/virt-platform-autopilot-cluster ./cmd/virt-platform-autopilot-cluster

## run: the controller against the current kubeconfig (RUN_ARGS adds flags)
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/virt-platform-autopilot-cluster run $(RUN_ARGS)

## demo: a throw-away control plane on loopback with a sample HCO and nodes, the autopilot running on it; Ctrl-C stops and removes it (DEMO_DETACH=1 leaves it running: make demo-stop)
demo: build envtest
	@$(GO) build -o $(BIN)/demo ./hack/demo
	@KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" $(BIN)/demo start --autopilot $(BIN)/virt-platform-autopilot

## demo-stop: stop every detached demo and remove its files
demo-stop:
	@$(GO) build -o $(BIN)/demo ./hack/demo
	@$(BIN)/demo stop

## console-plugin: the OpenShift console plugin into console-plugin/dist (the image serves it) and the browser test's host page into console-plugin/host/dist, with Node from the lockfile (npm ci when it changed); rebuilt when a source changed
CONSOLE_DIR = console-plugin
CONSOLE_SRC = $(shell find $(CONSOLE_DIR)/src $(CONSOLE_DIR)/host -type f -not -path '*/dist/*' 2>/dev/null) \
	$(addprefix $(CONSOLE_DIR)/,package.json package-lock.json console-extensions.json webpack.config.js tsconfig.json)
console-plugin: $(CONSOLE_DIR)/dist/plugin-manifest.json $(CONSOLE_DIR)/host/dist/host.js
$(CONSOLE_DIR)/node_modules/.installed: $(CONSOLE_DIR)/package-lock.json
	cd $(CONSOLE_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed
$(CONSOLE_DIR)/dist/plugin-manifest.json: $(CONSOLE_DIR)/node_modules/.installed $(CONSOLE_SRC)
	cd $(CONSOLE_DIR) && npm run --silent build -- --no-stats
	@touch $@
$(CONSOLE_DIR)/host/dist/host.js: $(CONSOLE_DIR)/node_modules/.installed $(CONSOLE_SRC)
	cd $(CONSOLE_DIR) && npm run --silent build-host -- --no-stats
	@touch $@

## envtest: build kube-apiserver and etcd from Go modules (once, cached); prints their folder last
envtest:
	@hack/envtest.sh "$(ENVTEST_BIN)"

## kubelet-check: build the kubelet's own configuration checks (hack/kubelet-check, for test/nodecheck) once, cached; prints the binary last
kubelet-check:
	@hack/kubelet-check.sh "$(TOOLS_BIN)"

## kustomize: build kustomize from Go modules (hack/kustomize, for test/e2e's KRM function run) once, cached; prints the binary last
kustomize:
	@hack/kustomize.sh "$(TOOLS_BIN)"

## test: the whole suite: unit, integration, conformance, e2e, alerts (the README's one test command)
# Tests that cannot run here (a tool, the vendors' CRDs) are listed at the
# end; under CI=true they fail instead.
NOT_RUN_LOG = $(CURDIR)/_output/not-run.txt
test: envtest kubelet-check kustomize console-plugin
	@mkdir -p $(dir $(NOT_RUN_LOG)) && rm -f $(NOT_RUN_LOG)
	cd $(CONSOLE_DIR) && npm test --silent
	@KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" KUBELET_CHECK="$$(hack/kubelet-check.sh "$(TOOLS_BIN)" | tail -n 1)" KUSTOMIZE="$$(hack/kustomize.sh "$(TOOLS_BIN)" | tail -n 1)" NOT_RUN_LOG="$(NOT_RUN_LOG)" $(GO) test ./... -count=1 -timeout 30m; rc=$$?; \
	if [ -s "$(NOT_RUN_LOG)" ]; then echo "NOT RUN ($$(wc -l < "$(NOT_RUN_LOG)"); set what each names, or they fail under CI=true):"; sed 's/^/  /' "$(NOT_RUN_LOG)"; fi; exit $$rc

## test-unit: unit tests only (no API server)
test-unit:
	$(GO) test $$($(GO) list ./... | grep -v /test/) -count=1

unit: test-unit

## test-integration: the suites under test/ against a real kube-apiserver + etcd (the console spec drives Chromium: CHROMIUM, else chromium on PATH)
test-integration: envtest console-plugin
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" $(GO) test ./test/... -count=1 -timeout 30m

## fuzz: run each fuzz target briefly (an execution count each, about 5s here; FUZZTIME overrides it for all); a crash is saved under testdata/fuzz and becomes a regression test
# Counts, not durations: a duration-based -fuzztime races Go's fuzzing
# coordinator at its deadline ("context deadline exceeded" with no crasher
# written, under CPU contention); a count has no deadline to race.
FUZZ_TARGETS = FuzzPatch:./pkg/overrides:10000x FuzzIgnoreFields:./pkg/overrides:10000x FuzzParse:./pkg/annotations:20000x FuzzFieldsV1:./pkg/managedfields:10000x FuzzOptInAnnotations:./pkg/engine:1000x FuzzMarshal:./pkg/objyaml:15000x FuzzUserinfo:./pkg/redact:20000x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$(if $(FUZZTIME),$(FUZZTIME),$${rest#*:}); \
		echo "fuzz $$name ($$budget)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name$$" -fuzztime $$budget; \
	done

## bench: Go micro-benchmarks, then the cost-model suite against a real control plane with the vendors' CRDs (VENDOR_CRDS, default ../shared/crds): _output/bench.json and a table; then the autopilot as its own process at 500, 2,000 and 5,000 nodes: _output/bench_scale.json (BENCH_THRASH: the field fight's length, default 60s)
VENDOR_CRDS ?= $(abspath ../shared/crds)
bench: envtest console-plugin
	$(GO) test ./... -run '^$$' -bench . -benchmem
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" VENDOR_CRDS="$(VENDOR_CRDS)" \
		$(GO) test -tags bench ./test/bench -run '^TestSuite$$' -count=1 -v -timeout 30m
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" VENDOR_CRDS="$(VENDOR_CRDS)" \
		$(GO) test -tags bench ./test/bench -run '^TestScale$$' -count=1 -v -timeout 45m

## screenshots: run the console browser spec and keep its screenshots as docs/images/console-*.png (the README and docs/architecture.md show them)
screenshots: envtest console-plugin
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh "$(ENVTEST_BIN)" | tail -n 1)" VENDOR_CRDS="$(VENDOR_CRDS)" UPDATE_SCREENSHOTS=1 \
		$(GO) test ./test/integration -count=1 -run TestIntegration -ginkgo.focus "shows in a browser" -ginkgo.v

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	# Both ways: a bench file without its build tag breaks the plain 'go test ./...'.
	$(GO) vet ./...
	$(GO) vet -tags bench ./...

## lint: gofmt, go vet, golangci-lint (.golangci.yml), bash -n and shellcheck (when installed) on hack/
lint: vet
	@for f in hack/*.sh; do bash -n "$$f"; done
	@if command -v shellcheck >/dev/null 2>&1; then shellcheck hack/*.sh; else echo "shellcheck not installed: hack/*.sh only syntax-checked"; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@hack/golangci-lint.sh "$(BIN)" "$(GOLANGCI_LINT_VERSION)" run ./...

## generate: docs/assets.md, the README asset table, config/rbac/role.yaml, the admission policy (config/rbac/admission_policy.yaml), the compiled catalog and the OLM bundle (bundle/), from the catalog and config/
generate:
	$(GO) run ./cmd/docs-gen
	$(GO) run ./cmd/rbac-gen
	$(GO) run ./cmd/bundle-gen

## bundle: the OLM bundle in bundle/ installing $(IMG); by digest (IMG=quay.io/<you>/virt-platform-autopilot@sha256:..., the digest 'make image' prints) the CSV says it installs disconnected, by tag it does not
bundle:
	$(GO) run ./cmd/bundle-gen -image $(IMG)

## catalog: the bundle image and a file-based catalog image holding it (OCI layouts in $(CATALOG_OUT), built from Go modules without a container engine: hack/catalog), the catalog checked by operator-registry's validation; BUNDLE_IMG and CATALOG_IMG name them
BUNDLE_IMG  ?= quay.io/kubevirt/virt-platform-autopilot-bundle:v0.1.0
CATALOG_IMG ?= quay.io/kubevirt/virt-platform-autopilot-catalog:v0.1.0
CATALOG_OUT ?= _output
catalog:
	cd hack/catalog && $(GO) run . -bundle $(abspath bundle) -out $(abspath $(CATALOG_OUT)) -bundle-image $(BUNDLE_IMG) -catalog-image $(CATALOG_IMG)

## verify: generated files are up to date, code is formatted and vetted
verify: vet
	@$(MAKE) --no-print-directory generate
	@git diff --exit-code -- docs/assets.md docs/annotations.md README.md config/rbac/role.yaml config/rbac/admission_policy.yaml assets/metadata.yaml.compiled.json bundle/ || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@untracked=$$(git status --porcelain --untracked-files=all -- bundle/ config/rbac/); if [ -n "$$untracked" ]; then echo "generated files not committed:"; echo "$$untracked"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

## image: the OCI image $(IMG) as an OCI layout in $(IMAGE_OUT), built from Go modules without a container engine (hack/image: both static binaries, non-root, entrypoint the cluster binary, labels); test/image opens it and runs it
IMAGE_OUT ?= _output/image
image: console-plugin
	@mkdir -p _output/image-bin
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o _output/image-bin/virt-platform-autopilot ./cmd/virt-platform-autopilot
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o _output/image-bin/virt-platform-autopilot-cluster ./cmd/virt-platform-autopilot-cluster
	cd hack/image && $(GO) run . -bin $(abspath _output/image-bin) -plugin $(abspath $(CONSOLE_DIR)/dist) -out $(abspath $(IMAGE_OUT)) -ref $(IMG) -version $(VERSION) -commit $(COMMIT)

## docker-build: the image $(IMG) with $(CONTAINER_TOOL)
docker-build:
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

## docker-push: push $(IMG)
docker-push:
	$(CONTAINER_TOOL) push $(IMG)

## deploy: install into the current cluster (config/default, image $(IMG)), namespace $(DEPLOY_NS)
deploy:
	hack/deploy.sh apply config/default $(IMG)

## undeploy: remove what deploy installed (the objects the autopilot manages stay: docs/deployment.md)
undeploy:
	hack/deploy.sh delete config/default $(IMG)

## kind-setup: a kind cluster with the CRDs the assets need and a mock HCO (VENDOR_CRDS: the vendors' CRDs)
kind-setup:
	CLUSTER=$(KIND_CLUSTER) CONTAINER_TOOL=$(CONTAINER_TOOL) hack/kind.sh setup

kind-delete:
	CLUSTER=$(KIND_CLUSTER) CONTAINER_TOOL=$(CONTAINER_TOOL) hack/kind.sh delete

## deploy-local: build $(LOCAL_IMG), load it into kind, deploy config/local
deploy-local:
	$(MAKE) --no-print-directory docker-build IMG=$(LOCAL_IMG)
	CLUSTER=$(KIND_CLUSTER) CONTAINER_TOOL=$(CONTAINER_TOOL) hack/kind.sh load $(LOCAL_IMG)
	hack/deploy.sh apply config/local $(LOCAL_IMG)

## logs-local: follow the autopilot's log on kind
logs-local:
	kubectl logs -n $(DEPLOY_NS) deployment/virt-platform-autopilot -f

## redeploy-local: rebuild, reload and restart the autopilot on kind
redeploy-local: deploy-local
	kubectl rollout restart -n $(DEPLOY_NS) deployment/virt-platform-autopilot
	kubectl rollout status -n $(DEPLOY_NS) deployment/virt-platform-autopilot --timeout=120s

## dev-cycle: fmt, test, redeploy-local
dev-cycle: fmt test redeploy-local

clean:
	rm -rf $(BIN) _output
