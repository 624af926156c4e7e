#!/usr/bin/env bash
# Installs BIND 9 (named; bind9-utils) and dig (bind9-dnsutils) from the
# Debian archive: the RFC 2136 tests start a real named on a loopback port,
# and the e2e tests query kfed's CoreDNS with dig as a user would.
# Idempotent: does nothing when both are there. `make test` calls it.
#
#   hack/install-bind.sh          install if missing, print named's path
set -euo pipefail

find_named() {
	command -v named 2>/dev/null && return 0
	[ -x /usr/sbin/named ] && { echo /usr/sbin/named; return 0; }
	return 1
}

if path=$(find_named) && command -v dig >/dev/null; then
	echo "$path"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "installing bind9, bind9-utils and bind9-dnsutils with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bind9 bind9-utils bind9-dnsutils >&2
# The package starts a system named; the tests run their own, so leave the
# system one alone but make sure it is not required.
find_named
