#!/usr/bin/env bash
# Installs BIND 9 (named; bind9-utils) and dig (bind9-dnsutils) from the
# Debian archive: the RFC 2136 tests start a real named on a loopback port,
# and the e2e tests query kfed's CoreDNS with dig as a user would.
# Idempotent: does nothing when both are there. `make test` calls it.
#
#   hack/install-bind.sh          install if missing, print named's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" named,dig,named-checkzone bind9 bind9-utils bind9-dnsutils
