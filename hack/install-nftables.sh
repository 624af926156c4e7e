#!/usr/bin/env bash
# Installs nftables (nft) from the Debian archive: the health-check e2e cuts
# one checker off from the load balancers with an nftables rule on loopback,
# a real kernel-level partition (the test needs root, as CI runs). Idempotent:
# does nothing when nft is there. `make test` calls it.
#
#   hack/install-nftables.sh      install if missing, print nft's path
set -euo pipefail

find_nft() {
	command -v nft 2>/dev/null && return 0
	[ -x /usr/sbin/nft ] && { echo /usr/sbin/nft; return 0; }
	return 1
}

if path=$(find_nft); then
	echo "$path"
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "installing nftables with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nftables >&2
find_nft
