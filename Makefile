# The two commands a new user needs: `make dev` and `make test`.
SHELL := /usr/bin/env bash
GO ?= go

.PHONY: dev test test-unit generate verify build bench bench-health fuzz fuzz-long

## dev: start a local federation (control plane + 3 members + DNS) on loopback.
dev:
	$(GO) build -o bin/ ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck
	KFED_BIN=$$(hack/test-binaries.sh | tail -n 1) bin/kfed dev up

## test: every test, unit and end-to-end against real servers.
test:
	hack/test.sh

## generate: deepcopy and CRD manifests from api/ with controller-gen.
generate:
	$(GO) tool controller-gen object paths=./api/...
	$(GO) tool controller-gen crd paths=./api/... output:crd:dir=deploy/crds
	$(GO) tool controller-gen rbac:roleName=kfed-controller paths=./clusters/... paths=./services/... paths=./manager/... paths=./dnssync/... paths=./replicas/balancer/... paths=./replicas/deployments/... output:rbac:dir=deploy/rbac
	$(GO) tool controller-gen rbac:roleName=kfed-healthcheck paths=./healthcheck/agent/... output:rbac:dir=deploy/healthcheck/rbac

## verify: generated files (deepcopy, CRDs, RBAC) match the code.
verify: generate
	git diff --exit-code -- api deploy/crds deploy/rbac deploy/healthcheck/rbac
	@test -z "$$(git status --porcelain -- api deploy/crds deploy/rbac deploy/healthcheck/rbac)" || { git status --short -- api deploy; exit 1; }

build:
	$(GO) build -o bin/ ./cmd/...

## bench-health: health-check detection latency, 20 trials at 1 s/fall 2 and at the defaults (~25 min).
bench-health:
	KFED_TEST_BIN=$$(hack/test-binaries.sh | tail -n 1) KFED_HEALTH_TRIALS=20 KFED_HEALTH_DEFAULTS=1 \
		$(GO) test -count=1 -timeout 60m -run TestHealthDetectionLatency -v ./test/e2e/ | grep -E 'trials|^(---|ok|FAIL)'

## fuzz: every Go fuzz target, one at a time, FUZZTIME each (default 2m, ~40 min in all; a duration or a count).
FUZZTIME ?= 2m
fuzz:
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

## fuzz-long: every fuzz target to 10 million executions, the run recorded in docs/reliability.md (hours).
fuzz-long:
	FUZZTIME=10000000x hack/fuzz.sh
