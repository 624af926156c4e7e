#!/usr/bin/env bash
# Installs runc, the OCI container runtime containerd and CRI-O run
# containers with, from the Debian archive (bookworm: runc 1.1.5, with
# libseccomp): the image tests (test/pods, test/e2e/release TestImages*) run kfed's
# images under it, as root, with the pod specs the Helm chart renders.
# Idempotent: does nothing when runc is there. `make test` calls it.
#
#   hack/install-runc.sh          install if missing, print runc's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" runc runc
