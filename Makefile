# sessiond — make help lists the targets.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GO      ?= go
BIN     := bin
# Build tags: TAGS=pprof serves Go's profiles on the socket when the daemon
# runs with SESSIOND_PPROF=1 (docs/api.md).
TAGS    ?=
# The packages' Maintainer (deb) and Packager (rpm).
MAINTAINER ?= sessiond maintainers <maintainers@sessiond.invalid>

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build sessiond, sessionctl and sessionctl's helpers into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -tags 'sessionctl_helpers $(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/sessiond ./cmd/sessiond/libexec/... ./cmd/sessionctl ./cmd/sessionctl/libexec/...

.PHONY: run
run: build ## Build, then run the daemon in the foreground on the embedded defaults
	$(BIN)/sessiond run

.PHONY: test
test: ## Run the whole test suite with the race detector (skipped tests say why)
	GO=$(GO) $(GO) run ./packaging/cmd/testreport -race -count=1 -timeout 15m ./...

.PHONY: lint
lint: ## gofmt, go vet, the macOS build and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

STATICCHECK_VERSION ?= v0.8.2

.PHONY: bench
bench: build ## Benchmarks (go test -bench) and the side-by-side scripts under bench/
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...
	bench/ps.sh

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 20s)
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-20s} $$pkg || exit 1; \
	  done; \
	done

.PHONY: cover
cover: ## Test coverage report in cover.html
	$(GO) test -race -coverprofile=cover.out ./...
	$(GO) tool cover -html=cover.out -o cover.html

.PHONY: demo
demo: build ## Three scripted agent sessions: complete, timeout after a warning, killed
	docs/demo/run.sh

.PHONY: package
package: ## .deb and .rpm (linux amd64/arm64), tarballs (and darwin arm64), SHA256SUMS in dist/
	$(GO) run ./packaging/cmd/release -version '$(VERSION)' -maintainer '$(MAINTAINER)' -dist dist

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN) dist cover.out cover.html
