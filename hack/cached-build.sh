# Sourced, not run: the cache that hack/helm.sh, hack/externaldns.sh and
# hack/promtool.sh build tools into from the Go module proxy. A tool lives
# under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<name>-<version>_<go version>_<sum>/bin/
# where <sum> hashes the files that decide the build (the pin's go.mod and
# go.sum, the calling script, this file, any helper sources), so changing
# any of them builds afresh; .complete marks a build that finished.
#
#   cached_build_begin NAME LABEL VERSION BINARY FILE... [-- "$@"]
# sets $dir and $bin, and if the tool is built prints $bin and exits 0; with
# the script's --print argument it exits 1 instead of building; otherwise it
# returns, and the script builds into $dir/bin and calls cached_build_end,
# which marks the build complete and prints $bin.

cached_build_begin() {
	local name=$1 version=$3 binary=$4
	cached_build_label=$2
	shift 4
	local files=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		files+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	local sum
	sum=$(cat "${files[@]}" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)
	dir="${XDG_CACHE_HOME:-$HOME/.cache}/kfed/${name}-${version}_$(go env GOVERSION)_${sum}"
	bin="$dir/bin/$binary"
	if [ -x "$bin" ] && [ -f "$dir/.complete" ]; then
		echo "$bin"
		exit 0
	fi
	if [ "${1:-}" = "--print" ]; then
		echo "$cached_build_label not built; run ${0#"$(pwd)/"}" >&2
		exit 1
	fi
	cached_build_start=$(date +%s)
	mkdir -p "$dir/bin"
}

# log prints progress to stderr, prefixed with the script and the seconds
# since cached_build_begin.
log() {
	echo "$(basename "$0" .sh): [$(($(date +%s) - cached_build_start))s] $*" >&2
}

cached_build_end() {
	touch "$dir/.complete"
	log "done in $(($(date +%s) - cached_build_start))s"
	echo "$bin"
}
