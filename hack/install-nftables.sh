#!/usr/bin/env bash
# Installs nftables (nft) from the Debian archive: the health-check e2e cuts
# one checker off from the load balancers with an nftables rule on loopback,
# a real kernel-level partition (the test needs root, as CI runs).
# Idempotent: does nothing when nft is there. `make test` calls it.
#
#   hack/install-nftables.sh      install if missing, print nft's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" nft nftables
