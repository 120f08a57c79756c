GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test vet fmt-check unit test-integration bench clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/meshtriage ./cmd/meshtriage

# The one test command: README and .ci/run both call it.
test: fmt-check vet unit fuzz test-integration

# Every parser of real Envoy and Istio output, and the manifests reader,
# fuzzed for FUZZTIME each (go test -fuzz takes one target a run), from the
# seed corpus of the realworld samples and testdata. A crash is written to
# the package's testdata/fuzz/TARGET/, where it stays as a regression case.
# Minimising a new input is capped: the default minute per input stalls
# the protojson targets.
FUZZTIME ?= 3s
FUZZ_TARGETS := \
	probes/parse/accesslog:FuzzParseTextLine \
	probes/parse/accesslog:FuzzParseJSONLine \
	probes/parse/envoy:FuzzParseClustersJSON \
	probes/parse/istiod:FuzzParseDebug \
	probes/parse/envoy:FuzzParseClustersText \
	probes/parse/envoy:FuzzParseListeners \
	probes/parse/envoy:FuzzStreamConfigDump \
	probes/parse/envoy:FuzzDecodeConfigDump \
	probes/parse/envoy:FuzzParseStats \
	probes/parse/envoy:FuzzParsePrometheus \
	probes/parse/envoy:FuzzParseSyncz \
	probes/parse/envoy:FuzzParseEdsz \
	probes/parse/envoy:FuzzParseXDSRejections \
	probes/parse/envoy:FuzzStreamRouteConfigs \
	probes/parse/ztunnel:FuzzParseLine \
	probes/parse/ztunnel:FuzzParseConfigDump \
	probes/cluster/manifests:FuzzDecode

.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn ($(FUZZTIME)) ./$$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./$$pkg; \
	done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -timeout 20m ./...

# The mesh lab: every scenario, every probe and the read-only RBAC role
# against a real kube-apiserver (built once into lab/.cache, minutes cold)
# with the Istio CRDs, etcd (Debian's etcd-server) and a fake kubelet, and
# proxy-status, the Envoy probes and the config model against a real istiod
# (pilot-discovery, built and cached the same way), the model also on the
# generative differential's sample of 300 worlds (about 5 minutes). The
# builds run first so that their minutes do not count against the test
# timeout.
test-integration:
	$(GO) run ./lab/cmd/meshlab build
	$(GO) vet -tags integration ./lab/...
	$(GO) test -tags integration -count=1 -timeout 45m ./lab/...

# The generative differential of the config model against the lab's real
# istiod (issue 24, lab/differential_worlds.go): N worlds of seed SEED
# (lab/worldgen) in batches of BATCH sharing one API server and istiod.
# make test runs its fixed sample (300 worlds of seed 24) in
# TestDifferentialWorlds; this runs as many as asked, e.g.
# make differential N=10000 SEED=7. Each world that differs is written to
# DIFFERENTIAL_OUT as a manifest, ready to become a model case.
N ?= 2000
SEED ?= 24
BATCH ?= 50
DIFFERENTIAL_OUT ?= $(CURDIR)/lab/.cache/differential
.PHONY: differential
differential:
	$(GO) run ./lab/cmd/meshlab build
	MESHLAB_DIFFERENTIAL_N=$(N) MESHLAB_DIFFERENTIAL_SEED=$(SEED) MESHLAB_DIFFERENTIAL_BATCH=$(BATCH) \
		MESHLAB_DIFFERENTIAL_OUT=$(DIFFERENTIAL_OUT) \
		$(GO) test -tags integration -count=1 -timeout 0 -v -run '^TestDifferentialWorlds$$' ./lab/

# Start the lab by hand; prints the KUBECONFIG to export, Ctrl-C stops it.
.PHONY: lab
lab:
	$(GO) run ./lab/cmd/meshlab up

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Releases, with GoReleaser v2 and syft (the SBOMs) on PATH. The configuration
# is .goreleaser.yaml, where goreleaser looks by default; `make release` needs
# a vX.Y.Z tag on HEAD and GITHUB_TOKEN. go test ./cmd/meshtriage/release
# checks the configuration without goreleaser.
GORELEASER ?= goreleaser

.PHONY: release-check release-snapshot release krew-manifest
release-check:
	$(GORELEASER) check

release-snapshot:
	$(GORELEASER) release --snapshot --clean

release:
	$(GORELEASER) release --clean

# The krew plugin manifest of release TAG, filled from its checksums, for the
# pull request to krew-index: make krew-manifest TAG=v1.2.3
krew-manifest:
	@test -n "$(TAG)" || { echo "usage: make krew-manifest TAG=vX.Y.Z"; exit 1; }
	$(GO) run ./cmd/meshtriage/release/krewmanifest -tag $(TAG) \
		-checksums bin/dist/meshtriage_$(TAG)_checksums.txt > bin/dist/meshtriage.yaml

clean:
	rm -rf bin
