#!/usr/bin/env bash
# Installs dnsperf from the Debian archive: the fault suite (test/reliability)
# restarts CoreDNS under dnsperf's load. Idempotent: does nothing when it is
# there. `make test` and `make reliability` call it.
#
#   hack/install-dnsperf.sh          install if missing, print dnsperf's path
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deb.sh" dnsperf dnsperf
