#!/usr/bin/env bash
# Installs Knot DNS (knotd) from the Debian archive: the e2e tests run it as
# a secondary that transfers the kfed plugin's zone, beside BIND's named.
# Idempotent: does nothing when it is there. `make test` calls it.
#
#   hack/install-knot.sh          install if missing, print knotd's path
set -euo pipefail

find_knotd() {
	command -v knotd 2>/dev/null && return 0
	[ -x /usr/sbin/knotd ] && { echo /usr/sbin/knotd; return 0; }
	return 1
}

if path=$(find_knotd); then
	echo "$path"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "installing knot with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends knot >&2
# The package may start a system knotd; the tests run their own.
find_knotd
