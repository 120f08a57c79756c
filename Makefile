GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test vet fmt-check unit test-integration bench clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/meshtriage ./cmd/meshtriage

# The one test command: README and .ci/run both call it.
test: fmt-check vet unit test-integration

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test ./...

# Filled in by the lab (issue: mesh lab): runs the probes against a real
# kube-apiserver with the Istio CRDs.
test-integration:
	@echo "test-integration: no integration tests yet"

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
