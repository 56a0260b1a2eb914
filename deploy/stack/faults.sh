# shellcheck shell=bash
# faults.sh: fault injection for the TestFault* tests and for rehearsals: crash and
# revive one Redis node, stop, start or restart the whole Redis Cluster, restart
# PostgreSQL, stop and start the broker.

cmd_redis_kill() {
	local port=${1:?usage: redis-kill PORT} pidfile
	pidfile="$RUN/redis/$port/redis.pid"
	pid_alive "$pidfile" || die "redis node $port is not running"
	kill -KILL "$(cat "$pidfile")"
	while pid_alive "$pidfile"; do sleep 0.05; done
	rm -f "$pidfile"
	log "redis $port: killed (SIGKILL)"
}

# cmd_redis_signal SIG PORT WHAT: send SIG to one cluster node. redis-freeze
# (SIGSTOP) is a node that hangs with its connections open (a long fork or
# swap stall, a partition that drops packets): commands are taken and never
# answered, and past cluster-node-timeout its replica is promoted; redis-thaw
# (SIGCONT) lets it go on, and a master failed over meanwhile learns so from
# the cluster bus and turns replica.
cmd_redis_signal() {
	local sig=$1 port=$2 pidfile
	[[ -n $port ]] || die "usage: redis-freeze PORT | redis-thaw PORT"
	pidfile="$RUN/redis/$port/redis.pid"
	pid_alive "$pidfile" || die "redis node $port is not running"
	kill "-$sig" "$(cat "$pidfile")"
	[[ $sig == CONT ]] && redis_wait_ok "$port"
	log "redis $port: $3"
}

# cmd_redis_start PORT brings one node back; with no port, every node (after
# redis-stop) and waits for cluster_state:ok on all of them.
cmd_redis_start() {
	local port=${1:-} t0 p ports
	if [[ -z $port ]]; then
		t0=$(now)
		mapfile -t ports < <(redis_ports)
		for p in "${ports[@]}"; do redis_start_node "$p"; done
		redis_wait_ok "${ports[@]}"
		log "redis: every node started in $(since "$t0")"
		return
	fi
	[[ -f "$RUN/redis/$port/redis.conf" ]] || die "redis node $port was never set up (run: up)"
	t0=$(now)
	redis_start_node "$port"
	redis_wait_ok "$port"
	log "redis $port: back in the cluster as $(redis_cli -p "$port" role | head -n1) in $(since "$t0")"
}

# cmd_redis_restart: every node shut down (SHUTDOWN flushes its AOF), then
# every node started again; the cluster re-forms from nodes.conf with the same
# roles (all nodes stop within a second, less than the node timeout, so no
# replica is promoted). What an operator's restart of the cluster looks like.
cmd_redis_restart() {
	local t0 p ports
	t0=$(now)
	mapfile -t ports < <(redis_ports)
	redis_down
	for p in "${ports[@]}"; do redis_start_node "$p"; done
	redis_wait_ok "${ports[@]}"
	log "redis: every node restarted in $(since "$t0")"
}

# cmd_redis_stop: every node shut down (SHUTDOWN flushes its AOF), the whole
# cluster away until redis-start.
cmd_redis_stop() {
	local t0
	t0=$(now)
	redis_down
	log "redis: every node stopped in $(since "$t0")"
}

cmd_pg_restart() {
	((EXTERNAL_PG)) && die "DATABASE_URL is set: the private PostgreSQL is not used"
	pg_bin || die "PostgreSQL binaries not found"
	pid_alive "$PG_DATA/postmaster.pid" || die "the private PostgreSQL is not running (run: up)"
	local t0
	t0=$(now)
	as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -m fast -w -t "$READY_TIMEOUT" restart >/dev/null ||
		{ tail_log "$PG_LOG"; die "postgres restart failed"; }
	log "postgres: restarted in $(since "$t0")"
}

cmd_broker_stop() {
	broker_down
	log "broker: stopped"
}

cmd_broker_start() { broker_up; }

# cmd_broker_signal SIG WHAT: send SIG to the broker we started. broker-freeze
# (SIGSTOP) is a broker that hangs with its connections open, as in a long GC
# pause or a partition that drops packets: requests are taken and never
# answered, unlike a stop, whose connections are refused. broker-thaw
# (SIGCONT) lets it go on.
cmd_broker_signal() {
	local pf
	case $(broker_kind) in
	kafka) pf="$KAFKA_DIR/kafka.pid" ;;
	kfake) pf="$KFAKE_DIR/kfake.pid" ;;
	*) die "no broker of ours is running (run: up)" ;;
	esac
	kill "-$1" "$(head -n1 "$pf")"
	log "broker: $2"
}
