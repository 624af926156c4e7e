#!/usr/bin/env bash
# Installs Debian packages the tests run, unless the commands they bring are
# already there. Idempotent; prints the first command's path. hack/test.sh
# calls it, directly or through hack/install-bind.sh.
#
#   hack/install-deb.sh COMMAND[,COMMAND...] PACKAGE...
#
# e.g. hack/install-deb.sh knotd knot; hack/install-deb.sh nft nftables.
# A COMMAND that is an absolute path (a plugin outside PATH, such as
# /usr/lib/cni/bridge) must exist there.
set -euo pipefail

if [ $# -lt 2 ]; then
	echo "usage: hack/install-deb.sh COMMAND[,COMMAND...] PACKAGE..." >&2
	exit 2
fi
IFS=, read -r -a commands <<<"$1"
shift

find_cmd() {
	case $1 in /*) [ -x "$1" ] && { echo "$1"; return 0; }; return 1 ;; esac
	command -v "$1" 2>/dev/null && return 0
	[ -x "/usr/sbin/$1" ] && { echo "/usr/sbin/$1"; return 0; }
	return 1
}
all_there() {
	local c
	for c in "${commands[@]}"; do find_cmd "$c" >/dev/null || return 1; done
}

if ! all_there; then
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		sudo="sudo"
	fi
	echo "installing $* with apt-get" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
	# A package may start a system daemon (named, knotd); the tests run their
	# own on other ports, so it is left alone.
fi
find_cmd "${commands[0]}"
