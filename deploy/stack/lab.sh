# shellcheck shell=bash
# lab.sh: what the lab (deploy/lab) needs beyond the stack: a redis-server whose clock
# can be set per node. Debian's redis-server cannot take libfaketime (jemalloc's start
# calls clock_gettime, which libfaketime hooks, which allocates: the server hangs at
# start), so the lab builds the same release from Debian's own source package with libc
# malloc, once, into a cache, and runs it under libfaketime (Debian's faketime package)
# with a timestamp file per node that the lab rewrites to move that node's clock.

LAB_REDIS_VERSION=${LAB_REDIS_VERSION:-7.0.15}
LAB_CACHE=${LAB_CACHE:-$HOME/.cache/flashsale/redis-lab-$LAB_REDIS_VERSION}
LAB_FAKETIME=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

# lab_redis: make sure the lab's redis-server and libfaketime are there; print the
# server's path and libfaketime's, one per line.
lab_redis() {
	[[ -f $LAB_FAKETIME ]] || { is_root || die "libfaketime is missing: install the Debian package 'faketime'"; install_pkg faketime; }
	if [[ ! -x $LAB_CACHE/redis-server ]]; then
		is_root || die "the lab's redis-server is not built yet: run 'deploy/stack/stack.sh lab-redis' as root once"
		local src
		src=$(mktemp -d)
		log "lab: fetching Debian's redis source package ($LAB_REDIS_VERSION) to build a redis-server with libc malloc"
		local list=/etc/apt/sources.list.d/flashsale-lab-src.sources
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$list"
		DEBIAN_FRONTEND=noninteractive apt-get update -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- >"$RUN/lab-apt.log" 2>&1 ||
			{ tail_log "$RUN/lab-apt.log"; die "apt-get update of the source list failed"; }
		(cd "$src" && apt-get source --download-only redis >>"$RUN/lab-apt.log" 2>&1) ||
			{ tail_log "$RUN/lab-apt.log"; die "apt-get source redis failed"; }
		tar -xzf "$src"/redis_"$LAB_REDIS_VERSION".orig.tar.gz -C "$src"
		log "lab: building redis-server (MALLOC=libc, about 30 s on two cores)"
		make -C "$src/redis-$LAB_REDIS_VERSION" -j"$(nproc)" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no >"$RUN/lab-build.log" 2>&1 ||
			{ tail_log "$RUN/lab-build.log"; die "building the lab's redis-server failed"; }
		mkdir -p "$LAB_CACHE"
		cp "$src/redis-$LAB_REDIS_VERSION/src/redis-server" "$LAB_CACHE/redis-server.tmp"
		mv "$LAB_CACHE/redis-server.tmp" "$LAB_CACHE/redis-server"
		rm -rf "$src"
	fi
	echo "$LAB_CACHE/redis-server"
	echo "$LAB_FAKETIME"
}
