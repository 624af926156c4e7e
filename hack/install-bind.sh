#!/usr/bin/env bash
# Installs BIND 9 (named, and dig/nsupdate from bind9-utils) from the Debian
# archive, for the RFC 2136 provider tests in dnsprovider/rfc2136, which start
# a real named on a loopback port. Idempotent: does nothing when named is
# already on PATH (or in /usr/sbin). CI (.ci/run) calls it before the tests.
#
#   hack/install-bind.sh          install if missing, print named's path
set -euo pipefail

find_named() {
	command -v named 2>/dev/null && return 0
	[ -x /usr/sbin/named ] && { echo /usr/sbin/named; return 0; }
	return 1
}

if path=$(find_named); then
	echo "$path"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "installing bind9 and bind9-utils with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bind9 bind9-utils >&2
# The package starts a system named; the tests run their own, so leave the
# system one alone but make sure it is not required.
find_named
