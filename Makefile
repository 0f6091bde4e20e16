# machina: build, test and generate. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail -o errexit -o nounset
.DEFAULT_GOAL := help

MODULES := proto sdk core conformance cmd drivers/inmemory drivers/virtualnode
# drivers/python-inmemory and drivers/node-inmemory hold the Go tests of the
# Python and Node.js drivers; bench the benchmark harness (only its unit
# tests run here; make bench runs it); internal the helpers cmd and bench
# share (process supervision).
MODULES += drivers/python-inmemory drivers/node-inmemory bench internal
PACKAGES := $(addsuffix /...,$(addprefix ./,$(MODULES)))

# Tools run through `go run` at pinned versions: nothing is installed by hand.
BUF_VERSION            := v1.75.0
CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION  := v2.15.0
BUF            := go run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

BIN := $(CURDIR)/bin
TEST_FLAGS ?= -count=1 -timeout=30m
SOAK_RUNS ?= 500
# make fuzz: time per fuzz target, and a regexp that picks targets.
FUZZTIME ?= 30s
FUZZ ?= .

.PHONY: help
help: ## Show this help.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build every binary into bin/.
	@mkdir -p $(BIN)
	@for d in $$(go list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' $(PACKAGES)); do \
	  echo "go build $${d#$(CURDIR)/}"; (cd $$d && go build -o $(BIN)/ .); done

.PHONY: images
images: ## Build the container images into bin/images (OCI layouts and tarballs; no container daemon needed).
	hack/images.sh $(IMAGES_ARGS)

.PHONY: assets
assets: ## Build (or find cached) kube-apiserver, etcd and kubectl for tests.
	@hack/envtest-assets.sh

.PHONY: deps
deps: ## Install the Debian packages the Python driver needs (a no-op when present).
	@hack/debian-deps.sh

.PHONY: test
test: deps ## Run every test: unit, envtest, end-to-end and conformance.
	@# The assets are built on first use and cached outside the work tree.
	assets=$$(hack/envtest-assets.sh); KUBEBUILDER_ASSETS=$$assets go test $(TEST_FLAGS) $(PACKAGES)

.PHONY: generate
generate: deps ## Regenerate the Driver API code, deepcopy functions and CRDs.
	$(BUF) generate
	@# Python stubs of drivers/python-inmemory: needs protobuf-compiler, protobuf-compiler-grpc.
	$(BUF) generate --template buf.gen.python.yaml
	@# The Driver API's sentence table and docs/conformance-matrix.md.
	cd conformance && go generate ./...
	@if [ -d core/api ]; then \
	  (cd core && $(CONTROLLER_GEN) object:headerFile=../hack/boilerplate.go.txt paths=./api/... && \
	   $(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=../deploy/crds); fi

.PHONY: verify
verify: deps ## Check generated code is current, buf lint and breaking, gofmt, go vet, golangci-lint, govulncheck, no large binaries.
	hack/verify-large-files.sh
	hack/verify-generated.sh
	$(BUF) lint
	hack/verify-breaking.sh "$(BUF)"
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	hack/lint.sh "$(GOLANGCI_LINT)"
	hack/govulncheck.sh

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml) over every module (part of verify).
	hack/lint.sh "$(GOLANGCI_LINT)"

.PHONY: vulncheck
vulncheck: ## Run govulncheck offline, from a database built from golang.org/x/vulndb (part of verify).
	hack/govulncheck.sh

.PHONY: verify-node
verify-node: ## Check the Node.js driver socket code of docs/writing-a-driver.md against @grpc/grpc-js (needs node, npm).
	hack/verify-node-socket.sh

.PHONY: fuzz
fuzz: ## Fuzz every FuzzXxx target for FUZZTIME each (default 30s; FUZZ=regexp picks targets).
	FUZZTIME=$(FUZZTIME) FUZZ=$(FUZZ) hack/fuzz.sh

.PHONY: conformance-soak
conformance-soak: deps ## Run the whole conformance suite SOAK_RUNS times (default 500) against each reference driver; every run must pass.
	assets=$$(hack/envtest-assets.sh); cd cmd/machina-conformance && KUBEBUILDER_ASSETS=$$assets \
	  MACHINA_CONFORMANCE_SOAK_RUNS=$(SOAK_RUNS) go test -count=1 -timeout=0 -run '^TestConformanceSoak$$' -v .

.PHONY: bench
bench: ## Run the benchmarks (driver calls, scale-up/down, rollout, API server ceiling); BENCH_ARGS for options.
	hack/bench.sh $(BENCH_ARGS)

.PHONY: chaos
chaos: ## Run the full fault suite (kills, API server outage, driver faults; docs/reliability.md); CHAOS_ARGS for options.
	hack/chaos.sh $(CHAOS_ARGS)

.PHONY: demo
demo: ## Run the demo on a local API server (DEMO_ARGS=--keep keeps it running).
	hack/demo.sh $(DEMO_ARGS)

.PHONY: clean
clean: ## Remove build output (the asset cache outside the tree stays).
	rm -rf $(BIN)
	go clean -testcache
