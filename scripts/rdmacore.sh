#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) a current rdma-core beside the system's (Debian 12's
# rdma-core 44), for the guest's tests of today's librxe and pyverbs.
#
#   scripts/rdmacore.sh build   build if the cache has none; print its dir
#
# The source is Debian's: rdma-core's upstream tarball from the source
# package of unstable, fetched by apt-get source through a deb-src entry
# that is used for this one command and never written to /etc/apt (or, once
# unstable has moved on, the same file from the archive's pool by apt's own
# downloader). The version is pinned below with the tarball's SHA-256: the
# guest's selection and allowed skips (tests/pyverbs/*-current.txt) are
# written for it, and a bump changes them together. It is built in place
# (its build.sh: cmake, ninja, IN_PLACE) in $RRXE_CACHE/rdma-core/
# VERSION-KEY, KEY hashing the pin, this recipe and the toolchain the
# build uses (/usr/bin's); a finished build there is reused. Its
# libraries, providers and pyverbs run from there (LD_LIBRARY_PATH,
# PYTHONPATH: `env` below) and the system's rdma-core stays as it is. The
# guest sees the directory at the same path (the host's root is its root).
#
#   scripts/rdmacore.sh env     print the environment that runs a program
#                               against the cached build (KEY=VALUE lines)
set -euo pipefail

RECIPE_REV=1 # bump when this script changes what it builds
PIN_VERSION=65.0
PIN_TARBALL=rdma-core_$PIN_VERSION.orig.tar.gz
PIN_SHA256=f6ba3d8b2c4aa334c5c883c1ad0772de339011123cff4fb1db32ae7a443fb7ca
CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
root=$CACHE/rdma-core

cmd=${1:-}
case "$cmd" in build | env) ;; *)
	echo "usage: $0 build|env" >&2
	exit 2
	;;
esac

build_key() {
	{
		echo "recipe $RECIPE_REV"
		echo "rdma-core $PIN_VERSION $PIN_SHA256"
		/usr/bin/python3 --version 2>&1
		/usr/bin/cython3 --version 2>&1 || echo "no cython3"
		/usr/bin/cmake --version 2>/dev/null | head -n1 || echo "no cmake"
		/usr/bin/gcc --version 2>/dev/null | head -n1 || echo "no gcc"
	} | sha256sum | cut -c1-12
}
out=$root/$PIN_VERSION-$(build_key)

# The finished build for this pin, recipe and toolchain.
cached() {
	[ -f "$out/.rrxe-done" ] && echo "$out"
}

case "$cmd" in
env)
	d=$(cached) || { echo "rdmacore: no build (scripts/rdmacore.sh build)" >&2; exit 1; }
	echo "RRXE_RDMA_CORE=$d"
	echo "RRXE_RDMA_CORE_VERSION=$PIN_VERSION"
	echo "LD_LIBRARY_PATH=$d/src/build/lib"
	echo "PYTHONPATH=$d/src/build/python"
	exit 0
	;;
esac

if d=$(cached); then
	echo "rdmacore: reusing cached rdma-core $PIN_VERSION $d" >&2
	echo "$d"
	exit 0
fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if d=$(cached); then echo "$d"; exit 0; fi

work=$(mktemp -d "$root/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
mkdir -p "$work/lists/partial"
apt_opts=(-o "Dir::Etc::sourcelist=$work/src.sources" -o Dir::Etc::sourceparts=-
	-o "Dir::State::Lists=$work/lists" -o APT::Get::List-Cleanup=0)
tar=$work/$PIN_TARBALL
printf 'Types: deb-src\nURIs: %s\nSuites: unstable\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	"$mirror" >"$work/src.sources"
uris=
apt-get update "${apt_opts[@]}" >>"$work/log" 2>&1 &&
	uris=$(cd "$work" && apt-get source --print-uris "${apt_opts[@]}" rdma-core/unstable 2>>"$work/log") || true
if grep -q "'[^']*/$PIN_TARBALL' $PIN_TARBALL [0-9]* SHA256:$PIN_SHA256\$" <<<"$uris"; then
	# apt-get source fetches the tarball first; the Debian files after it
	# may be missing from the mirror (it then exits non-zero).
	(cd "$work" && apt-get source --download-only "${apt_opts[@]}" rdma-core/unstable) >>"$work/log" 2>&1 || true
else
	echo "rdmacore: unstable's index names no $PIN_TARBALL of the pinned hash; from the pool" >>"$work/log"
	rm -f "$tar"
	/usr/lib/apt/apt-helper download-file "$mirror/pool/main/r/rdma-core/$PIN_TARBALL" "$tar" \
		"SHA256:$PIN_SHA256" >>"$work/log" 2>&1 || true
fi
if ! [ -f "$tar" ] || [ "$(sha256sum "$tar" | cut -c1-64)" != "$PIN_SHA256" ]; then
	echo "rdmacore: no $PIN_TARBALL with SHA-256 $PIN_SHA256 from $mirror" \
		"(if Debian has dropped it, bump the pin in scripts/rdmacore.sh with tests/pyverbs/*-current.txt):" >&2
	tail -n 5 "$work/log" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out/src"
tar -xf "$tar" -C "$out/src" --strip-components=1
echo "rdmacore: building rdma-core $PIN_VERSION in $out (about 2 minutes)" >&2
# The machine's own python3 may come first on PATH without Cython: the
# build then leaves pyverbs out without a word, so Debian's are named.
if ! (cd "$out/src" && PATH=/usr/bin:$PATH \
	EXTRA_CMAKE_FLAGS="-DPYTHON_EXECUTABLE=/usr/bin/python3 -DCYTHON_EXECUTABLE=/usr/bin/cython3 -DNO_MAN_PAGES=1" \
	bash build.sh) >"$out/build.log" 2>&1; then
	echo "rdmacore: build failed; see $out/build.log" >&2
	tail -n 5 "$out/build.log" >&2
	exit 1
fi
for f in lib/librxe-rdmav*.so lib/libibverbs.so python/pyverbs bin/run_tests.py; do
	# shellcheck disable=SC2086 # the glob is meant
	if ! ls -d "$out"/src/build/$f >/dev/null 2>&1; then
		echo "rdmacore: the build has no $f; see $out/build.log" >&2
		exit 1
	fi
done
touch "$out/.rrxe-done"
echo "$out"
