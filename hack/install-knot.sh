#!/usr/bin/env bash
# Installs Knot DNS (knotd) from the Debian archive: the e2e tests run it as
# a secondary that transfers the kfed plugin's zone, beside BIND's named.
# Idempotent: does nothing when it is there. `make test` calls it.
#
#   hack/install-knot.sh          install if missing, print knotd's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" knotd knot
