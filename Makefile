# The two commands a new user needs: `make dev` and `make test`.
SHELL := /usr/bin/env bash
GO ?= go

.PHONY: dev test test-unit generate verify build bench

## dev: start a local federation (control plane + 3 members + DNS) on loopback.
dev:
	$(GO) build -o bin/ ./cmd/kfed ./cmd/coredns
	KFED_BIN=$$(hack/test-binaries.sh | tail -n 1) bin/kfed dev up

## test: every test, unit and end-to-end against real servers.
test:
	hack/test.sh

## generate: deepcopy and CRD manifests from api/ with controller-gen.
generate:
	$(GO) tool controller-gen object paths=./api/...
	$(GO) tool controller-gen crd paths=./api/... output:crd:dir=deploy/crds
	$(GO) tool controller-gen rbac:roleName=kfed-controller paths=./clusters/... paths=./services/... paths=./manager/... paths=./dnssync/... paths=./replicas/balancer/... output:rbac:dir=deploy/rbac

## verify: generated files (deepcopy, CRDs) match api/.
verify: generate
	git diff --exit-code -- api deploy/crds deploy/rbac

build:
	$(GO) build -o bin/ ./cmd/...
