#!/usr/bin/env bash
# Local stack for flashsale: a real Redis Cluster (6 nodes, 3 masters + 3 replicas),
# PostgreSQL and a Kafka-protocol broker (Apache Kafka in KRaft mode, or the embedded
# franz-go kfake as a fallback), all on 127.0.0.1. All state lives under <repo>/.run/.
#
# Usage: deploy/stack/stack.sh up|down|status|redis-kill PORT|redis-start PORT|pg-restart|broker-stop|broker-start
#   up           start whatever is missing, wait until healthy, write .run/env
#   down         stop everything this script started (add --purge to delete .run state)
#   status       one line per component; exit code 1 if anything is unhealthy
#   redis-kill   SIGKILL one cluster node (crash simulation); redis-start brings it back
#   pg-restart   restart the private PostgreSQL (fast shutdown)
#   broker-stop  stop the Kafka broker (an outage); broker-start brings it back with its data
#
# Environment: REDIS_BASE_PORT (7001), PG_PORT (55432), KAFKA_PORT (9092),
# KAFKA_CONTROLLER_PORT (19093), KAFKA_VERSION (4.4.0), DATABASE_URL (use an external
# PostgreSQL instead of the private one), FLASHSALE_KAFKA=kfake (force the fallback broker).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
RUN="$ROOT/.run"

REDIS_BASE_PORT=${REDIS_BASE_PORT:-7001}
REDIS_NODES=6
PG_PORT=${PG_PORT:-55432}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
KAFKA_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/flashsale/kafka-$KAFKA_VERSION"
STOP_TIMEOUT=${STOP_TIMEOUT:-30}
READY_TIMEOUT=${READY_TIMEOUT:-60}

PRIVATE_DB_URL="postgres://flashsale@127.0.0.1:$PG_PORT/flashsale?sslmode=disable"
# A DATABASE_URL equal to the private one (e.g. from a sourced .run/env) is not external.
EXTERNAL_PG=0
if [[ -n "${DATABASE_URL:-}" && "$DATABASE_URL" != "$PRIVATE_DB_URL" ]]; then EXTERNAL_PG=1; fi
DB_URL=${DATABASE_URL:-$PRIVATE_DB_URL}

PG_DIR="$RUN/pg"
PG_DATA="$PG_DIR/data"
PG_SOCK="$PG_DIR/sock"
PG_LOG="$PG_DIR/postgres.log"
KAFKA_DIR="$RUN/kafka"
KFAKE_DIR="$RUN/kfake"

# ---------------------------------------------------------------- helpers

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
is_root() { [[ $(id -u) -eq 0 ]]; }

redis_ports() {
	local i
	for ((i = 0; i < REDIS_NODES; i++)); do echo $((REDIS_BASE_PORT + i)); done
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

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

# tail_log FILE: print the end of a log to stderr for a failure message.
tail_log() {
	[[ -f "$1" ]] || return 0
	printf -- '----- last lines of %s -----\n' "$1" >&2
	tail -n 30 "$1" >&2 || true
	printf -- '-----\n' >&2
}

# wait_apt: if a background apt-get is running (it logs to /tmp/apt-install.log and
# writes "done" at the end), wait for it instead of fighting over the dpkg lock.
wait_apt() {
	local f=/tmp/apt-install.log i
	[[ -f $f ]] || return 0
	for ((i = 0; i < 600; i++)); do
		[[ "$(tail -n1 "$f" 2>/dev/null)" == done* ]] && return 0
		((i % 30 == 0)) && log "waiting for the background apt-get (see $f)..."
		sleep 1
	done
	log "background apt-get did not finish in 10 minutes; going on"
}

# need CMD PKG: make sure CMD exists, installing the Debian package PKG if root.
need() {
	local cmd=$1 pkg=$2
	command -v "$cmd" >/dev/null 2>&1 && return 0
	wait_apt
	command -v "$cmd" >/dev/null 2>&1 && return 0
	is_root || die "'$cmd' is missing: install the Debian package '$pkg' (sudo apt-get install -y $pkg)"
	install_pkg "$pkg"
	command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' still missing after installing $pkg"
}

install_pkg() {
	log "installing Debian package(s): $*"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >"$RUN/apt.log" 2>&1; then
		log "install failed; running apt-get update first"
		DEBIAN_FRONTEND=noninteractive apt-get update >>"$RUN/apt.log" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >>"$RUN/apt.log" 2>&1 ||
			{ tail_log "$RUN/apt.log"; die "apt-get install $* failed"; }
	fi
}

# ---------------------------------------------------------------- redis

redis_cli() { redis-cli -h 127.0.0.1 "$@"; }

redis_node_alive() { pid_alive "$RUN/redis/$1/redis.pid" && [[ "$(redis_cli -p "$1" ping 2>/dev/null)" == PONG ]]; }

redis_synced() { # PORT: a master, or a replica whose link to its master is up
	local info
	info=$(redis_cli -p "$1" info replication 2>/dev/null | tr -d '\r') || return 1
	grep -q '^role:master' <<<"$info" || grep -q '^master_link_status:up' <<<"$info"
}

redis_info_field() { # PORT FIELD: one field of CLUSTER INFO
	{ redis_cli -p "$1" cluster info 2>/dev/null || true; } | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}

redis_write_conf() {
	local port=$1 dir="$RUN/redis/$1"
	mkdir -p "$dir"
	cat >"$dir/redis.conf" <<EOF
# generated by deploy/stack/stack.sh
bind 127.0.0.1
port $port
protected-mode no
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 2000
maxmemory-policy noeviction
appendonly yes
appendfsync everysec
save ""
EOF
}

redis_start_node() {
	local port=$1 dir="$RUN/redis/$1" i
	if redis_node_alive "$port"; then return 0; fi
	if pid_alive "$dir/redis.pid"; then
		die "redis $port: process $(cat "$dir/redis.pid") is alive but does not answer PING"
	fi
	rm -f "$dir/redis.pid"
	port_open "$port" && die "port $port is taken by a process that is not ours (redis node $port)"
	redis_write_conf "$port"
	redis-server "$dir/redis.conf" || { tail_log "$dir/redis.log"; die "redis-server $port failed to start"; }
	for ((i = 0; i < 100; i++)); do
		[[ "$(redis_cli -p "$port" ping 2>/dev/null)" == PONG ]] && return 0
		sleep 0.1
	done
	tail_log "$dir/redis.log"
	die "redis $port does not answer PING"
}

# redis_wait_ok [PORT...]: wait until every given node answers PING, reports
# cluster_state:ok, knows all nodes, and, for a replica, has finished its sync
# with its master (after a restart a replica resyncs and answers LOADING a while).
redis_wait_ok() {
	local deadline=$((SECONDS + READY_TIMEOUT)) p bad
	while :; do
		bad=
		for p in "$@"; do
			if ! redis_node_alive "$p" || ! redis_synced "$p" || [[ "$(redis_info_field "$p" cluster_state)" != ok ||
				"$(redis_info_field "$p" cluster_known_nodes)" != "$REDIS_NODES" ]]; then
				bad=$p
				break
			fi
		done
		[[ -z $bad ]] && return 0
		if ((SECONDS >= deadline)); then
			redis_cli -p "$bad" cluster info >&2 || true
			tail_log "$RUN/redis/$bad/redis.log"
			die "redis node $bad did not reach cluster_state:ok within ${READY_TIMEOUT}s"
		fi
		sleep 0.2
	done
}

redis_up() {
	local t0 p ports formed=0 addrs=()
	t0=$(now)
	need redis-server redis-server
	need redis-cli redis-tools
	mapfile -t ports < <(redis_ports)
	for p in "${ports[@]}"; do redis_start_node "$p"; done
	# Formed means some node already knows the others or owns slots (nodes.conf survives
	# restarts, so a restarted cluster re-forms by itself).
	for p in "${ports[@]}"; do
		if [[ "$(redis_info_field "$p" cluster_known_nodes)" != 1 ||
			"$(redis_info_field "$p" cluster_slots_assigned)" != 0 ]]; then
			formed=1
			break
		fi
	done
	if ((formed == 0)); then
		for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
		log "redis: creating the cluster (3 masters, 3 replicas)"
		redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
			>"$RUN/redis/cluster-create.log" 2>&1 ||
			{ tail_log "$RUN/redis/cluster-create.log"; die "redis-cli --cluster create failed"; }
	fi
	redis_wait_ok "${ports[@]}"
	log "redis: cluster ready on 127.0.0.1:${ports[0]}-${ports[-1]} in $(since "$t0")"
}

redis_down() {
	local p dir pid
	for p in $(redis_ports); do
		dir="$RUN/redis/$p"
		pid_alive "$dir/redis.pid" || { rm -f "$dir/redis.pid"; continue; }
		pid=$(cat "$dir/redis.pid")
		# SHUTDOWN flushes the AOF; fall back to signals if it does not answer.
		redis_cli -p "$p" shutdown >/dev/null 2>&1 || true
		printf '%s\n' "$pid" >"$dir/redis.pid.stop"
		stop_pid "$dir/redis.pid.stop" "redis $p"
		rm -f "$dir/redis.pid"
	done
}

redis_status() {
	local p role s masters=0 replicas=0 down=() state=ok roles=() ok=0
	for p in $(redis_ports); do
		if ! redis_node_alive "$p"; then down+=("$p"); roles+=("$p:down"); continue; fi
		role=$({ redis_cli -p "$p" role 2>/dev/null || true; } | head -n1 | tr -d '\r')
		case $role in
		master) masters=$((masters + 1)); roles+=("$p:M") ;;
		slave) replicas=$((replicas + 1)); roles+=("$p:R") ;;
		*) roles+=("$p:?") ;;
		esac
		s=$(redis_info_field "$p" cluster_state)
		if [[ $s != ok && $state == ok ]]; then state=${s:-unknown}; fi
	done
	((${#down[@]} == REDIS_NODES)) && state=down
	if ((${#down[@]} == 0)) && [[ $state == ok ]] && ((masters == 3 && replicas == 3)); then ok=1; fi
	report "redis" "127.0.0.1:$REDIS_BASE_PORT-$((REDIS_BASE_PORT + REDIS_NODES - 1))" "$ok" \
		"$masters masters, $replicas replicas, cluster_state:$state [${roles[*]}]"
}

# ---------------------------------------------------------------- postgres

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x "$d/initdb" ]] && { PG_BIN=$d; }
	done
	[[ -n "${PG_BIN:-}" ]]
}

# as_pg CMD...: run a PostgreSQL server-side command as the postgres user when root.
as_pg() {
	if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

pg_ready() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -d postgres -U postgres 2>/dev/null; }

pg_psql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres "$@"; }

pg_prepare_dirs() {
	local d
	mkdir -p "$PG_DATA" "$PG_SOCK"
	if is_root; then
		id postgres >/dev/null 2>&1 || die "no 'postgres' system user (install the postgresql package)"
		chown postgres:postgres "$PG_DIR" "$PG_DATA" "$PG_SOCK"
		# The postgres user must be able to reach .run/pg: make the parents traversable.
		d=$RUN
		while [[ $d != / ]]; do
			runuser -u postgres -- test -x "$d" 2>/dev/null || chmod o+x "$d"
			d=$(dirname "$d")
		done
	fi
	chmod 700 "$PG_DATA"
}

pg_up() {
	local t0
	need psql postgresql-client
	need pg_isready postgresql-client
	if ((EXTERNAL_PG)); then
		pg_isready -q -d "$DATABASE_URL" -t 5 || die "DATABASE_URL is set but does not answer pg_isready"
		psql -X -q -d "$DATABASE_URL" -c 'select 1' >/dev/null || die "DATABASE_URL is set but 'select 1' fails"
		log "postgres: using external DATABASE_URL (no private server)"
		return 0
	fi
	t0=$(now)
	if ! pg_bin; then
		wait_apt
		if ! pg_bin; then
			is_root || die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: install the Debian package 'postgresql'"
			install_pkg postgresql
			pg_bin || die "PostgreSQL server binaries still missing after installing postgresql"
		fi
	fi
	if ! { pid_alive "$PG_DATA/postmaster.pid" && pg_ready; }; then
		port_open "$PG_PORT" && die "port $PG_PORT is taken by a process that is not ours (postgres)"
		pg_prepare_dirs
		if [[ ! -f "$PG_DATA/PG_VERSION" ]]; then
			log "postgres: initdb into $PG_DATA"
			as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
				>"$PG_DIR/initdb.log" 2>&1 || { tail_log "$PG_DIR/initdb.log"; die "initdb failed"; }
			cat >>"$PG_DATA/postgresql.conf" <<EOF

# ---- flashsale local stack (deploy/stack/stack.sh) ----
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
max_connections = 200
shared_buffers = 256MB
effective_cache_size = 1GB
work_mem = 8MB
maintenance_work_mem = 128MB
fsync = on
synchronous_commit = on
wal_compression = on
max_wal_size = 2GB
checkpoint_completion_target = 0.9
max_worker_processes = 4
max_parallel_workers = 2
max_parallel_workers_per_gather = 1
log_min_duration_statement = 500
EOF
		fi
		rm -f "$PG_DATA/postmaster.pid.stale"
		as_pg touch "$PG_LOG" 2>/dev/null || true
		as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$READY_TIMEOUT" start >/dev/null ||
			{ tail_log "$PG_LOG"; die "postgres failed to start"; }
	fi
	local i
	for ((i = 0; i < READY_TIMEOUT * 5; i++)); do pg_ready && break; sleep 0.2; done
	pg_ready || { tail_log "$PG_LOG"; die "postgres does not accept connections on 127.0.0.1:$PG_PORT"; }
	if [[ "$(pg_psql -tAc "select 1 from pg_roles where rolname = 'flashsale'")" != 1 ]]; then
		pg_psql -c "create role flashsale login superuser"
	fi
	if [[ "$(pg_psql -tAc "select 1 from pg_database where datname = 'flashsale'")" != 1 ]]; then
		pg_psql -c "create database flashsale owner flashsale"
	fi
	log "postgres: ready on 127.0.0.1:$PG_PORT in $(since "$t0")"
}

pg_down() {
	((EXTERNAL_PG)) && return 0
	[[ -f "$PG_DATA/postmaster.pid" ]] || return 0
	pg_bin || die "PostgreSQL binaries not found"
	if pid_alive "$PG_DATA/postmaster.pid"; then
		as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t "$STOP_TIMEOUT" stop >/dev/null 2>&1 || true
		if pid_alive "$PG_DATA/postmaster.pid"; then
			log "postgres did not stop with pg_ctl; signalling"
			head -n1 "$PG_DATA/postmaster.pid" >"$PG_DIR/postmaster.pid.stop"
			stop_pid "$PG_DIR/postmaster.pid.stop" postgres
		fi
	fi
}

pg_restart() {
	((EXTERNAL_PG)) && die "DATABASE_URL is set: the private PostgreSQL is not used"
	pg_bin || die "PostgreSQL binaries not found"
	pid_alive "$PG_DATA/postmaster.pid" || die "the private PostgreSQL is not running (run: up)"
	local t0
	t0=$(now)
	as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -m fast -w -t "$READY_TIMEOUT" restart >/dev/null ||
		{ tail_log "$PG_LOG"; die "postgres restart failed"; }
	log "postgres: restarted in $(since "$t0")"
}

pg_status() {
	local url=$DB_URL
	if ((EXTERNAL_PG)); then
		if pg_isready -q -d "$DATABASE_URL" -t 2 2>/dev/null; then
			report postgres "external DATABASE_URL" 1 "accepting connections"
		else
			report postgres "external DATABASE_URL" 0 "not answering"
		fi
		return
	fi
	if pg_ready && psql -X -q -d "$url" -tAc 'select 1' >/dev/null 2>&1; then
		report postgres "127.0.0.1:$PG_PORT" 1 "accepting connections, database flashsale"
	elif pg_ready; then
		report postgres "127.0.0.1:$PG_PORT" 0 "server up but database/role flashsale missing"
	else
		report postgres "127.0.0.1:$PG_PORT" 0 "not accepting connections"
	fi
}

# ---------------------------------------------------------------- kafka / kfake

# broker_metadata: the broker on KAFKA_PORT answers a metadata request.
broker_metadata() {
	if command -v kcat >/dev/null 2>&1; then
		kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 3 2>/dev/null | grep -q "broker .* at 127.0.0.1:$KAFKA_PORT"
	else
		port_open "$KAFKA_PORT"
	fi
}

broker_kind() { # which broker we started: kafka, kfake or nothing
	if pid_alive "$KAFKA_DIR/kafka.pid"; then echo kafka
	elif pid_alive "$KFAKE_DIR/kfake.pid"; then echo kfake
	else echo none; fi
}

broker_label() {
	case $1 in
	kafka) echo "kafka $(cat "$KAFKA_DIR/version" 2>/dev/null || echo "$KAFKA_VERSION") (KRaft, java)" ;;
	kfake) echo "kfake (embedded fallback)" ;;
	*) echo "none" ;;
	esac
}

# broker_wait KIND PIDFILE LOG: wait until the broker answers metadata.
broker_wait() {
	local kind=$1 pidfile=$2 logf=$3 deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		pid_alive "$pidfile" || { tail_log "$logf"; die "$kind exited during start-up"; }
		if broker_metadata; then
			# Without kcat a TCP connect is weak evidence; also want the start-up line.
			if command -v kcat >/dev/null 2>&1 || [[ $kind == kfake ]] ||
				grep -q "Kafka Server started" "$logf" 2>/dev/null; then
				return 0
			fi
		fi
		sleep 0.2
	done
	tail_log "$logf"
	die "$kind did not answer metadata on 127.0.0.1:$KAFKA_PORT within ${READY_TIMEOUT}s"
}

kafka_fetch() {
	local libs="$KAFKA_CACHE/libs" tmp t0
	[[ -f "$KAFKA_CACHE/.complete" ]] && return 0
	t0=$(now)
	log "kafka: fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $libs"
	mkdir -p "$KAFKA_CACHE"
	tmp=$(mktemp -d "$KAFKA_CACHE/libs.tmp.XXXXXX")
	if ! mvn -q -B -f "$ROOT/deploy/kafka/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies -DoutputDirectory="$tmp" >"$KAFKA_CACHE/mvn.log" 2>&1; then
		rm -rf "$tmp"
		tail_log "$KAFKA_CACHE/mvn.log"
		return 1
	fi
	rm -rf "$libs"
	mv "$tmp" "$libs"
	touch "$KAFKA_CACHE/.complete"
	log "kafka: first fetch took $(since "$t0") ($(du -sh "$libs" | cut -f1))"
}

kafka_start() {
	local libs="$KAFKA_CACHE/libs" t0 cid
	mkdir -p "$KAFKA_DIR/data"
	port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is taken by a process that is not ours (kafka)"
	port_open "$KAFKA_CONTROLLER_PORT" &&
		die "port $KAFKA_CONTROLLER_PORT is taken by a process that is not ours (kafka controller)"
	cat >"$KAFKA_DIR/server.properties" <<EOF
# generated by deploy/stack/stack.sh
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:$KAFKA_CONTROLLER_PORT
log.dirs=$KAFKA_DIR/data
num.partitions=8
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
num.network.threads=2
num.io.threads=4
log.retention.hours=24
EOF
	cat >"$KAFKA_DIR/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
	local jopts=(-Xms512m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
		-Dlog4j2.configurationFile="$KAFKA_DIR/log4j2.properties" -cp "$libs/*")
	if [[ ! -f "$KAFKA_DIR/data/meta.properties" ]]; then
		cid=$(java "${jopts[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
		[[ -n $cid ]] || die "kafka: StorageTool random-uuid failed"
		echo "$cid" >"$KAFKA_DIR/cluster.id"
		java "${jopts[@]}" kafka.tools.StorageTool format -t "$cid" -c "$KAFKA_DIR/server.properties" \
			--standalone >"$KAFKA_DIR/format.log" 2>&1 || { tail_log "$KAFKA_DIR/format.log"; die "kafka storage format failed"; }
	fi
	echo "$KAFKA_VERSION" >"$KAFKA_DIR/version"
	t0=$(now)
	# setsid: the broker must outlive the shell (and process group) that started it.
	rm -f "$KAFKA_DIR/kafka.pid"
	# The inner shell writes its own pid and then execs java, so the pidfile is exact.
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$KAFKA_DIR/kafka.pid" \
		java "${jopts[@]}" kafka.Kafka "$KAFKA_DIR/server.properties" \
		>>"$KAFKA_DIR/kafka.log" 2>&1 </dev/null &
	wait_pidfile "$KAFKA_DIR/kafka.pid"
	broker_wait kafka "$KAFKA_DIR/kafka.pid" "$KAFKA_DIR/kafka.log"
	log "kafka: Apache Kafka $KAFKA_VERSION (KRaft) answering on 127.0.0.1:$KAFKA_PORT; start took $(since "$t0")"
}

kfake_start() {
	local t0
	port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is taken by a process that is not ours (kfake)"
	need go golang
	mkdir -p "$KFAKE_DIR/data"
	t0=$(now)
	(cd "$ROOT" && go build -o "$KFAKE_DIR/kfake" ./deploy/kfake) || die "building deploy/kfake failed"
	log "kfake: built in $(since "$t0")"
	t0=$(now)
	rm -f "$KFAKE_DIR/kfake.pid"
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$KFAKE_DIR/kfake.pid" \
		"$KFAKE_DIR/kfake" -port "$KAFKA_PORT" -dir "$KFAKE_DIR/data" -partitions 8 \
		>>"$KFAKE_DIR/kfake.log" 2>&1 </dev/null &
	wait_pidfile "$KFAKE_DIR/kfake.pid"
	broker_wait kfake "$KFAKE_DIR/kfake.pid" "$KFAKE_DIR/kfake.log"
	log "kfake: embedded broker answering on 127.0.0.1:$KAFKA_PORT; start took $(since "$t0")"
}

broker_up() {
	local kind want=kafka
	need kcat kcat
	kind=$(broker_kind)
	if [[ $kind != none ]]; then
		if broker_metadata; then
			if [[ ${FLASHSALE_KAFKA:-} == kfake && $kind == kafka ]]; then
				log "broker: FLASHSALE_KAFKA=kfake but Apache Kafka is running; keeping it (run down first to switch)"
			elif [[ ${FLASHSALE_KAFKA:-} != kfake && $kind == kfake ]]; then
				log "broker: kfake is running; keeping it (run down first to switch to Apache Kafka)"
			fi
			BROKER=$kind
			return 0
		fi
		log "broker: $kind is running but not answering; restarting it"
		broker_down
	fi
	if [[ ${FLASHSALE_KAFKA:-} == kfake ]]; then
		want=kfake
	elif ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
		log "broker: java or mvn missing; using the embedded kfake fallback"
		want=kfake
	elif ! kafka_fetch; then
		log "broker: fetching Kafka jars failed; using the embedded kfake fallback"
		want=kfake
	fi
	if [[ $want == kafka ]]; then kafka_start; else kfake_start; fi
	BROKER=$want
}

broker_down() {
	stop_pid "$KAFKA_DIR/kafka.pid" kafka
	stop_pid "$KFAKE_DIR/kfake.pid" kfake
}

broker_status() {
	local kind
	kind=$(broker_kind)
	if [[ $kind == none ]]; then
		report broker "127.0.0.1:$KAFKA_PORT" 0 "not running"
	elif broker_metadata; then
		report broker "127.0.0.1:$KAFKA_PORT" 1 "$(broker_label "$kind"), answering metadata"
	else
		report broker "127.0.0.1:$KAFKA_PORT" 0 "$(broker_label "$kind"), NOT answering metadata"
	fi
}

# ---------------------------------------------------------------- commands

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

write_env() {
	local addrs=() p
	for p in $(redis_ports); do addrs+=("127.0.0.1:$p"); done
	{
		echo "# generated by deploy/stack/stack.sh up; load it with: . .run/env"
		echo "export FLASHSALE_REDIS=$(shq "$(IFS=,; echo "${addrs[*]}")")"
		echo "export DATABASE_URL=$(shq "$DB_URL")"
		echo "export KAFKA_BROKERS=$(shq "127.0.0.1:$KAFKA_PORT")"
		echo "export FLASHSALE_BROKER=$(shq "$BROKER")"
	} >"$RUN/env.tmp"
	mv "$RUN/env.tmp" "$RUN/env"
}

cmd_up() {
	local t0
	t0=$(now)
	mkdir -p "$RUN/redis" "$KAFKA_DIR" "$KFAKE_DIR"
	[[ -f "$RUN/.gitignore" ]] || echo '*' >"$RUN/.gitignore"
	BROKER=none
	redis_up
	pg_up
	broker_up
	write_env
	log "up: done in $(since "$t0"); broker: $(broker_label "$BROKER"); env in $RUN/env"
	cmd_status
}

cmd_down() {
	local leftovers=() p t0
	t0=$(now); broker_down; log "down: broker stopped in $(since "$t0")"
	t0=$(now); pg_down; log "down: postgres stopped in $(since "$t0")"
	t0=$(now); redis_down; log "down: redis stopped in $(since "$t0")"
	for p in $(redis_ports) "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
		port_open "$p" && leftovers+=("$p")
	done
	((EXTERNAL_PG)) || { port_open "$PG_PORT" && leftovers+=("$PG_PORT"); }
	((${#leftovers[@]})) && die "down: something still listens on port(s) ${leftovers[*]}"
	if [[ ${1:-} == --purge ]]; then
		rm -rf "$RUN"
		log "down: stopped everything and removed $RUN"
	else
		log "down: stopped everything (state kept in $RUN; 'down --purge' deletes it)"
	fi
}

cmd_status() {
	UNHEALTHY=0
	if command -v redis-cli >/dev/null 2>&1; then redis_status; else report redis "-" 0 "redis-cli missing"; fi
	if command -v pg_isready >/dev/null 2>&1; then pg_status; else report postgres "-" 0 "pg_isready missing"; fi
	broker_status
	return "$UNHEALTHY"
}

cmd_redis_kill() {
	local port=${1:?usage: redis-kill PORT} pidfile
	pidfile="$RUN/redis/$port/redis.pid"
	pid_alive "$pidfile" || die "redis node $port is not running"
	kill -KILL "$(cat "$pidfile")"
	while pid_alive "$pidfile"; do sleep 0.05; done
	rm -f "$pidfile"
	log "redis $port: killed (SIGKILL)"
}

cmd_redis_start() {
	local port=${1:?usage: redis-start PORT} t0
	[[ -f "$RUN/redis/$port/redis.conf" ]] || die "redis node $port was never set up (run: up)"
	t0=$(now)
	redis_start_node "$port"
	redis_wait_ok "$port"
	log "redis $port: back in the cluster as $(redis_cli -p "$port" role | head -n1) in $(since "$t0")"
}

main() {
	local cmd=${1:-}
	shift || true
	case $cmd in
	up) cmd_up ;;
	down) cmd_down "$@" ;;
	status) cmd_status ;;
	redis-kill) cmd_redis_kill "$@" ;;
	redis-start) cmd_redis_start "$@" ;;
	pg-restart) pg_restart ;;
	broker-stop) broker_down; log "broker: stopped" ;;
	broker-start) broker_up ;;
	*)
		sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
