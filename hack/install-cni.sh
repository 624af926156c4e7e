#!/usr/bin/env bash
# Installs the CNI plugins a real dev-bed node (kfed dev up --real-nodes)
# wires its pods with — bridge, host-local, loopback and portmap — from the
# Debian archive (bookworm: containernetworking-plugins 1.1.1, into
# /usr/lib/cni), and, for the stand-ins of the MCS suite's images
# (hack/nodeimages), busybox-static and socat. Idempotent.
#
#   hack/install-cni.sh          install if missing, print the CNI plugins' folder
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
"$here/install-deb.sh" busybox,socat busybox-static socat >/dev/null
bridge=$("$here/install-deb.sh" /usr/lib/cni/bridge,/usr/lib/cni/host-local,/usr/lib/cni/loopback,/usr/lib/cni/portmap \
	containernetworking-plugins)
dirname "$bridge"
