# shellcheck shell=bash
# postgres.sh: the private PostgreSQL on 127.0.0.1:PG_PORT (data under .run/pg), or
# an external one named by DATABASE_URL.

PG_PORT=${PG_PORT:-55432}
PRIVATE_DB_URL="postgres://flashsale@127.0.0.1:$PG_PORT/flashsale?sslmode=disable"
# A DATABASE_URL equal to the private one (e.g. from a sourced .run/env) is not external.
EXTERNAL_PG=0
if [[ -n "${DATABASE_URL:-}" && "$DATABASE_URL" != "$PRIVATE_DB_URL" ]]; then EXTERNAL_PG=1; fi
DB_URL=${DATABASE_URL:-$PRIVATE_DB_URL}
# The secure endpoint (secure.sh): TLS checked against the local CA, the writer's
# own role and database (it owns the schema; flashsale_ro may only read).
PG_SECURE_DB=flashsale_secure
PG_SECURE_URL=
((EXTERNAL_PG)) || PG_SECURE_URL="postgres://flashsale_writer@127.0.0.1:$PG_PORT/$PG_SECURE_DB?sslmode=verify-full&sslrootcert=$RUN/tls/ca.pem"

PG_DIR="$RUN/pg"
PG_DATA="$PG_DIR/data"
PG_SOCK="$PG_DIR/sock"
PG_LOG="$PG_DIR/postgres.log"

# pg_bin: set PG_BIN to the newest /usr/lib/postgresql/*/bin with an initdb.
pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x "$d/initdb" ]] && { PG_BIN=$d; }
	done
	[[ -n "${PG_BIN:-}" ]]
}

# pg_ensure_server: the server binaries are there (they are not on PATH, so
# ensure_pkg cannot look for them).
pg_ensure_server() {
	pg_bin && return 0
	wait_apt
	pg_bin && return 0
	is_root || die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: install the Debian package 'postgresql'"
	install_pkg postgresql
	pg_bin || die "PostgreSQL server binaries still missing after installing postgresql"
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

# pg_initdb: create the cluster in PG_DATA with the stack's settings.
pg_initdb() {
	log "postgres: initdb into $PG_DATA"
	as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
		>"$PG_DIR/initdb.log" 2>&1 || { tail_log "$PG_DIR/initdb.log"; die "initdb failed"; }
	cat >>"$PG_DATA/postgresql.conf" <<CONF

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
CONF
}

# pg_start: start the private server unless it already runs and answers.
pg_start() {
	pid_alive "$PG_DATA/postmaster.pid" && pg_ready && return 0
	port_ours_or_die "$PG_PORT" postgres
	port_free_of_clients "$PG_PORT"
	pg_prepare_dirs
	[[ -f "$PG_DATA/PG_VERSION" ]] || pg_initdb
	rm -f "$PG_DATA/postmaster.pid.stale"
	as_pg touch "$PG_LOG" 2>/dev/null || true
	as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$READY_TIMEOUT" start >/dev/null ||
		{ tail_log "$PG_LOG"; die "postgres failed to start"; }
}

# pg_ensure_db: wait for connections, then create role and database flashsale.
pg_ensure_db() {
	local i
	for ((i = 0; i < READY_TIMEOUT * 5; i++)); do pg_ready && break; sleep 0.2; done
	pg_ready || { tail_log "$PG_LOG"; die "postgres does not accept connections on 127.0.0.1:$PG_PORT"; }
	if [[ "$(pg_psql -tAc "select 1 from pg_roles where rolname = 'flashsale'")" != 1 ]]; then
		pg_psql -c "create role flashsale login superuser"
	fi
	if [[ "$(pg_psql -tAc "select 1 from pg_database where datname = 'flashsale'")" != 1 ]]; then
		pg_psql -c "create database flashsale owner flashsale"
	fi
}

# pg_secure: TLS on (ssl=on with the stack's certificate), the password roles
# reachable over hostssl only, with scram-sha-256, and their database.
pg_secure() {
	local tls="$PG_DIR/tls" hba="$PG_DATA/pg_hba.conf" role pw
	mkdir -p "$tls"
	cp "$TLS_DIR/server.pem" "$TLS_DIR/server.key" "$tls/"
	chmod 600 "$tls/server.key"
	if is_root; then chown -R postgres:postgres "$tls"; fi
	if ! as_pg grep -q '^# flashsale secure roles' "$hba"; then
		as_pg sh -c "{ printf '%s\n' '# flashsale secure roles (deploy/stack/postgres.sh): TLS and a password, never plain' \
			'hostssl all flashsale_writer,flashsale_ro 127.0.0.1/32 scram-sha-256' \
			'host all flashsale_writer,flashsale_ro 0.0.0.0/0 reject'; cat '$hba'; } >'$hba.new' && mv '$hba.new' '$hba'"
	fi
	pg_psql -c "alter system set ssl = on" -c "alter system set ssl_cert_file = '$tls/server.pem'" \
		-c "alter system set ssl_key_file = '$tls/server.key'" -c "alter system set password_encryption = 'scram-sha-256'" \
		-c "select pg_reload_conf()" >/dev/null
	for role in "${PG_ROLES[@]}"; do
		pw=$(secret "pg-$role")
		if [[ "$(pg_psql -tAc "select 1 from pg_roles where rolname = '$role'")" != 1 ]]; then
			pg_psql -c "create role $role login"
		fi
		pg_psql -c "alter role $role login nosuperuser nocreatedb nocreaterole password '$pw'" >/dev/null
	done
	if [[ "$(pg_psql -tAc "select 1 from pg_database where datname = '$PG_SECURE_DB'")" != 1 ]]; then
		pg_psql -c "create database $PG_SECURE_DB owner flashsale_writer"
	fi
	pg_psql -d "$PG_SECURE_DB" -c "revoke all on database $PG_SECURE_DB from public" \
		-c "grant connect on database $PG_SECURE_DB to flashsale_ro" -c "grant usage on schema public to flashsale_ro" \
		-c "alter default privileges for role flashsale_writer in schema public grant select on tables to flashsale_ro" \
		-c "grant select on all tables in schema public to flashsale_ro" >/dev/null
}

pg_external_up() {
	pg_isready -q -d "$DATABASE_URL" -t 5 || die "DATABASE_URL is set but does not answer pg_isready"
	psql -X -q -d "$DATABASE_URL" -c 'select 1' >/dev/null || die "DATABASE_URL is set but 'select 1' fails"
	log "postgres: using external DATABASE_URL (no private server)"
}

pg_up() {
	local t0
	ensure_pkg psql postgresql-client
	ensure_pkg pg_isready postgresql-client
	if ((EXTERNAL_PG)); then pg_external_up; return 0; fi
	t0=$(now)
	pg_ensure_server
	pg_start
	pg_ensure_db
	pg_secure
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
