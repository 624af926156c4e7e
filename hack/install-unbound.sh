#!/usr/bin/env bash
# Installs Unbound from the Debian archive: the failover benchmark resolves
# through it, a caching resolver that honours TTLs, as clients do.
# Idempotent: does nothing when it is there. `make test` calls it.
#
#   hack/install-unbound.sh          install if missing, print unbound's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" unbound unbound
