# The two commands a new user needs: `make dev` and `make test`.
SHELL := /usr/bin/env bash
GO ?= go

.PHONY: dev dev-nodes test-nodes test fleet fleet-figures test-unit conformance conformance-nodes generate verify build version release bench bench-health bench-failover bench-load chart reliability images scale scale-exports fuzz fuzz-long

# The version every binary reports (--version, kfed version, kfed_build_info)
# and images are tagged with: the nearest v* tag, else the commit; -dirty
# when the tree has changes. Override with make VERSION=v0.3.0 ...
VERSION ?= $(shell git describe --tags --match 'v*' --always --dirty 2>/dev/null || echo unknown)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/kfed-io/kfed/internal/buildinfo.version=$(VERSION) -X github.com/kfed-io/kfed/internal/buildinfo.revision=$(REVISION)
# kfed's binaries build as the images and the tests do (hack/test.sh): static,
# without the builder's paths. So `make test` after `make dev` reuses every
# package `make dev` compiled (client-go, CoreDNS, controller-runtime) rather
# than compiling them again with cgo and full paths.
BUILD := CGO_ENABLED=0 $(GO) build -trimpath

## dev: start a local federation (control plane + 3 members + DNS) on loopback.
dev:
	$(BUILD) -ldflags "$(LDFLAGS)" -o bin/ ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck
	KFED_BIN=$$(hack/test-binaries.sh | tail -n 1) bin/kfed dev up

## dev-nodes: make dev with a real node per member (kubelet, containerd, runc, CNI, kube-proxy, cluster DNS); Linux, root.
dev-nodes:
	$(BUILD) -ldflags "$(LDFLAGS)" -o bin/ ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck
	$(BUILD) -tags kubernetes -ldflags "$(LDFLAGS)" -o bin/coredns-kubernetes ./cmd/coredns
	hack/install-cni.sh >/dev/null && $(GO) run ./hack/nodeimages -out bin/nodeimages
	KFED_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_RUNC=$$(hack/install-runc.sh) \
	KFED_KUBELET_BIN=$$(dirname $$(hack/kubelet.sh | tail -n 1)) KFED_CONTAINERD_BIN=$$(dirname $$(hack/containerd.sh | tail -n 1)) \
	bin/kfed dev up --real-nodes

## test-nodes: pods on real nodes resolve and reach the demo through their cluster DNS, and the Helm chart runs there (root; test/e2e/nodes).
test-nodes:
	KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_HELM=$$(hack/helm.sh | tail -n 1) KFED_REAL_NODES=1 $(GO) test -count=1 -timeout 30m -v ./test/e2e/nodes/

## test: every test, unit and end-to-end against real servers.
test:
	hack/test.sh

## conformance: the MCS API conformance suite against kfed dev up's three members (~10 min); report in bin/conformance/.
conformance:
	hack/conformance.sh

## conformance-nodes: the same suite on kfed dev up --real-nodes, with the tests that exec into pods (DNS, connectivity, "should be inaccessible"); root; report in bin/conformance-nodes/.
conformance-nodes:
	KFED_CONFORMANCE_REAL_NODES=1 hack/conformance.sh

## generate: deepcopy and CRD manifests from api/ with controller-gen.
generate:
	$(GO) tool controller-gen object paths=./api/...
	$(GO) tool controller-gen crd paths=./api/... output:crd:dir=deploy/crds
	$(GO) tool controller-gen rbac:roleName=kfed-controller paths=./clusters/... paths=./controllers/... paths=./dns/... paths=./policy/tenancy/... output:rbac:dir=deploy/rbac
	# The Helm chart carries copies: it cannot read files outside itself.
	cp deploy/crds/*.yaml deploy/chart/kfed/files/crds/
	cp deploy/rbac/role.yaml deploy/chart/kfed/files/rbac/controller.yaml
	cp deploy/member/rbac.yaml deploy/chart/kfed/files/rbac/member.yaml
	cp deploy/coredns/clusterset-rbac.yaml deploy/chart/kfed/files/rbac/clusterset.yaml

## verify: generated files (deepcopy, CRDs, RBAC) match the code.
verify: generate
	git diff --exit-code -- api deploy/crds deploy/rbac deploy/chart/kfed/files
	@test -z "$$(git status --porcelain -- api deploy/crds deploy/rbac deploy/chart/kfed/files)" || { git status --short -- api deploy; exit 1; }

build:
	$(BUILD) -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

## version: the version above, which `make images` tags the images with; the README's install passes it to helm (make -s version).
version:
	@echo $(VERSION)

## release: kfed for linux, darwin and windows (amd64, arm64), the chart packaged with appVersion $(VERSION), and SHA256SUMS, in bin/release/ (hack/release.sh).
release:
	VERSION='$(VERSION)' LDFLAGS='$(LDFLAGS)' hack/release.sh

## bench-health: health-check detection latency, 20 trials at 1 s/fall 2 and at the defaults (~25 min).
bench-health:
	KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_HEALTH_TRIALS=20 KFED_HEALTH_DEFAULTS=1 \
		$(GO) test -count=1 -timeout 60m -run 'TestHealthOnOneBed/TestHealthDetectionLatency' -v ./test/e2e/health/ | grep -E 'trials|^(---|ok|FAIL)'

## bench-load: the closed loop of load-aware answers with real clients through Unbound (BENCHMARKS.md); samples in bin/load-loop.csv, figure docs/load-loop.svg.
bench-load:
	hack/install-unbound.sh >/dev/null
	mkdir -p bin
	set -o pipefail; KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_LOAD_LOOP=full KFED_LOAD_LOOP_REPORT=$(CURDIR)/bin/load-loop.csv \
		$(GO) test -count=1 -timeout 30m -run 'TestHealthOnOneBed/TestLoadClosedLoop' -v ./test/e2e/health/ | grep -E 'capacity|requests|published|^\s+---|^(---|ok|FAIL)'
	python3 hack/plot-load.py bin/load-loop.csv docs/load-loop.svg

## bench-failover: failover as a client sees it, through Unbound: 20 trials at failover-within 10s and at the defaults (~30 min).
bench-failover:
	hack/install-unbound.sh >/dev/null
	KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_FAILOVER_TRIALS=20 KFED_FAILOVER_DEFAULTS=1 \
		$(GO) test -count=1 -timeout 90m -run 'TestHealthOnOneBed/TestFailoverAsAClientSeesIt' -v ./test/e2e/health/ | grep -E 'trials|^(---|ok|FAIL)'

## chart: helm lint and helm template of the chart for every values example, no servers (helm from hack/helm.sh).
chart:
	KFED_HELM=$$(hack/helm.sh | tail -n 1) $(GO) test -count=1 -run TestChart -skip TestChartInstalls ./test/e2e/release/

## reliability: the fault suite in full (1,000 Services, 20 controller kills, a minute frozen; ~30-40 min).
## Figures go to reliability-figures.txt; docs/reliability.md has the last run's. `make test` runs its short form.
reliability:
	hack/install-bind.sh >/dev/null
	hack/install-dnsperf.sh >/dev/null
	set -o pipefail; KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_RELIABILITY=full KFED_RELIABILITY_REPORT=$(CURDIR)/reliability-figures.txt \
		$(GO) test -count=1 -timeout 90m -run TestFaults -v ./test/reliability/ | grep -E 'FIGURE|^\s+\S+_test.go|^(---|ok|FAIL|PASS)'

## images: container images of kfed-controller, kfed-healthcheck and CoreDNS (linux/amd64 and linux/arm64) as OCI layouts in bin/images/, without Docker (docs/images.md).
PLATFORMS ?= linux/amd64,linux/arm64
images:
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		$(GO) run ./hack/images -version $(VERSION) -revision $(REVISION) -platforms $(PLATFORMS) -out bin/images

## scale: 10,000 federated Services x 3 members: publish time, controller CPU/RSS, API requests, plugin
## catch-up, then 5 quiet minutes with no writes (~20-30 min on 2 cores: it published in 9.5 min last; `make test` runs 200 Services).
scale:
	set -o pipefail; KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) \
		KFED_SCALE_SERVICES=$${KFED_SCALE_SERVICES:-10000} KFED_SCALE_STEADY=$${KFED_SCALE_STEADY:-5m} \
		$(GO) test -count=1 -timeout 120m -run TestScaleServicesPublishQuicklyAndStayQuiet -v ./test/e2e/scale/ \
		| tee $${TMPDIR:-/tmp}/kfed-scale.log | grep -E 'scale:|^ +rest_client|^(---|ok|FAIL)|scale_test.go:[0-9]+: [^s]'

## fleet: test/e2e/fleet on kfed dev up's bed of FLEET_MEMBERS (default 10) light members: a Service answers in every
## member, a failed endpoint leaves every member's answers and comes back, a checker cut off alone flips nothing (~2-3 min; .ci/run runs it).
FLEET_MEMBERS ?= 10
fleet:
	hack/install-nftables.sh >/dev/null
	set -o pipefail; KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_FLEET_MEMBERS=$(FLEET_MEMBERS) \
		$(GO) test -count=1 -timeout 20m -run TestFleetServiceAnswersEverywhere -v ./test/e2e/fleet/ | grep -E 'fleet_test.go|^ *(---|ok|FAIL)'

## fleet-figures: BENCHMARKS.md's fleet table for FLEET_MEMBERS members and 1,000 Services (FIGURE lines; ~5-15 min, 30 members
## ~30, with KFED_FLEET_INTERVAL=30s: 2 cores do not answer 9,000 probes a second beside 31 API servers).
fleet-figures:
	set -o pipefail; KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_FLEET_MEMBERS=$(FLEET_MEMBERS) KFED_FLEET_SERVICES=$${KFED_FLEET_SERVICES:-1000} \
		$(GO) test -count=1 -timeout 70m -run TestFleetFigures -v ./test/e2e/fleet/ | grep --line-buffered -E 'FIGURE|progress:|fleet_test.go|figures_test.go|^ *(---|ok|FAIL)'

## scale-exports: Multi-Cluster Services: 100 exports (created -> answered in every member, deleted -> NXDOMAIN,
## p50/p95), then 1,000 (controller CPU and RSS), each with a quiet minute with no writes (~15 min on 2 cores).
scale-exports:
	set -o pipefail; for n in $${KFED_SCALE_EXPORTS:-100 1000}; do \
		KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_SCALE_EXPORTS=$$n KFED_SCALE_STEADY=$${KFED_SCALE_STEADY:-1m} \
		$(GO) test -count=1 -timeout 60m -run TestScaleExportsAnswerQuicklyAndStayQuiet -v ./test/e2e/scale/ \
		| tee $${TMPDIR:-/tmp}/kfed-scale-exports-$$n.log | grep -E 'exports:|^(---|ok|FAIL)' || exit 1; done

## fuzz: every Go fuzz target, one at a time, FUZZTIME each (default 2m, ~40 min in all; a duration or a count).
FUZZTIME ?= 2m
fuzz:
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

## fuzz-long: every fuzz target to 10 million executions, the run recorded in docs/reliability.md (hours).
fuzz-long:
	FUZZTIME=10000000x hack/fuzz.sh
