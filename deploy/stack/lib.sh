# shellcheck shell=bash
# lib.sh: the helpers every part of the stack uses: logging and timing, ports,
# pidfile supervision, status lines and shell quoting. Sourced by stack.sh; defines
# functions only.

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
is_root() { [[ $(id -u) -eq 0 ]]; }

# ---------------------------------------------------------------- ports

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_ours_or_die PORT WHAT: refuse to start WHAT when a stranger holds PORT.
port_ours_or_die() {
	port_open "$1" && die "port $1 is taken by a process that is not ours ($2)"
	return 0
}

# port_free_of_clients PORT: a listener can bind PORT only once no client
# socket uses it as its own (source) port. PORT 55432 lies in Linux's
# ephemeral range (32768-60999), and a connection made just before, to Redis
# say, was seen (2026-12-02) taking it and failing the PostgreSQL start with
# "Address already in use" while nothing listened there. As root, PORT is
# reserved (net.ipv4.ip_local_reserved_ports) so no later client takes it;
# then this waits up to 60 s for the sockets that hold it to go. Once PORT
# was reserved before, sockets in TIME_WAIT do not count: no client took it
# since, so they are the old server's closed connections, which inherit its
# SO_REUSEADDR and do not stop a new bind (they kept make down && make up
# waiting most of a minute for nothing).
port_free_of_clients() {
	local f=/proc/sys/net/ipv4/ip_local_reserved_ports cur i states=(exclude listening)
	if [[ -w $f ]]; then
		cur=$(cat "$f")
		if [[ ,$cur, == *",$1,"* ]]; then
			states+=(exclude time-wait)
		else
			echo "${cur:+$cur,}$1" >"$f" 2>/dev/null || true
		fi
	fi
	for ((i = 0; i < 600; i++)); do
		[[ -z $(ss -Htan "${states[@]}" "sport = :$1" 2>/dev/null) ]] && return 0
		((i == 0)) && log "port $1 is held by a client connection (its source port); waiting for it to close"
		sleep 0.1
	done
	die "port $1 is still held by a client connection after 60 s"
}

# ---------------------------------------------------------------- pidfile supervision

# proc_alive PID: the process exists and is not a zombie (daemons are reparented to
# PID 1, which may reap them late).
proc_alive() {
	local stat
	kill -0 "$1" 2>/dev/null || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# pid_alive PIDFILE: the pidfile exists and names a live process.
pid_alive() {
	local pid
	[[ -s "$1" ]] || return 1
	pid=$(head -n1 "$1" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] && proc_alive "$pid"
}

# stop_pid PIDFILE NAME: SIGTERM, wait up to STOP_TIMEOUT seconds, then SIGKILL.
stop_pid() {
	local pidfile=$1 name=$2 pid i
	if ! pid_alive "$pidfile"; then rm -f "$pidfile"; return 0; fi
	pid=$(head -n1 "$pidfile")
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
		proc_alive "$pid" || break
		sleep 0.1
	done
	if proc_alive "$pid"; then
		log "$name (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do proc_alive "$pid" || break; sleep 0.1; done
	fi
	rm -f "$pidfile"
}

# wait_pidfile FILE: wait (up to 5 s) for a freshly started process to write its pidfile.
wait_pidfile() {
	local i
	for ((i = 0; i < 50; i++)); do [[ -s "$1" ]] && return 0; sleep 0.1; done
	die "no pidfile $1 after start"
}

# start_daemon PIDFILE LOG CMD...: run CMD in the background, detached (setsid: it
# must outlive the shell and process group that started it), appending its output to
# LOG, and wait for PIDFILE. The inner shell writes its own pid and then execs CMD,
# so the pidfile is exact.
start_daemon() {
	local pidfile=$1 logf=$2
	shift 2
	rm -f "$pidfile"
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" >>"$logf" 2>&1 </dev/null &
	wait_pidfile "$pidfile"
}

# tail_log FILE: print the end of a log to stderr for a failure message.
tail_log() {
	[[ -f "$1" ]] || return 0
	printf -- '----- last lines of %s -----\n' "$1" >&2
	tail -n 30 "$1" >&2 || true
	printf -- '-----\n' >&2
}

# ---------------------------------------------------------------- status and env

UNHEALTHY=0
report() { # NAME ADDR OK MESSAGE
	local state=healthy
	if [[ $3 != 1 ]]; then state=UNHEALTHY; UNHEALTHY=1; fi
	printf '%-9s %-24s %-10s %s\n' "$1" "$2" "$state" "$4"
}

# shq VALUE: the value as a shell word, single-quoted only when it needs quoting.
shq() {
	if [[ $1 =~ ^[A-Za-z0-9_.,:/@=+-]*$ ]]; then printf '%s' "$1"
	else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
