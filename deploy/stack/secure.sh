# shellcheck shell=bash
# secure.sh: what the stack's secure endpoints share: a local CA and one server
# certificate (CN localhost, SAN 127.0.0.1 and localhost) made with openssl
# under .run/tls, and one password file per service user under .run/secrets
# (random, mode 0600, kept across restarts). Every service keeps its plain
# endpoint beside the secure one, so the tests that use plain ones run as
# before; the secure ones carry the production settings:
#   Redis      tls-port = port + REDIS_TLS_OFFSET, ACL users from deploy/k8s/base/redis/users.acl
#   Kafka      SASL_SSL listener on KAFKA_SECURE_PORT (SCRAM-SHA-512), ACLs of the KafkaUsers
#   PostgreSQL ssl=on, hostssl + scram-sha-256 for the roles flashsale_writer and flashsale_ro

TLS_DIR="$RUN/tls"
SECRETS_DIR="$RUN/secrets"
REDIS_TLS_OFFSET=${REDIS_TLS_OFFSET:-50}
KAFKA_SECURE_PORT=${KAFKA_SECURE_PORT:-$((KAFKA_PORT + 50))}
# The service users: Redis ACL users and Kafka SCRAM users share a name and a
# password file (SECRETS_DIR/NAME); PostgreSQL roles have theirs (pg-NAME).
SECURE_USERS=(gateway writer ops)
PG_ROLES=(flashsale_writer flashsale_ro)
KAFKA_USERS=(flashsale-gateway flashsale-writer flashsale-ops) # as in deploy/k8s/base/kafka-users.yaml

# tls_up: the CA and the server certificate, made once (kept while valid).
tls_up() {
	ensure_pkg openssl openssl
	mkdir -p "$TLS_DIR"
	if [[ -f "$TLS_DIR/server.pem" ]] && openssl x509 -checkend 86400 -noout -in "$TLS_DIR/server.pem" >/dev/null 2>&1; then
		return 0
	fi
	log "tls: making a local CA and a server certificate in $TLS_DIR"
	(
		cd "$TLS_DIR"
		umask 077
		openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=flashsale local CA" \
			-keyout ca.key -out ca.pem >/dev/null 2>&1
		openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr >/dev/null 2>&1
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
			-extfile server.ext -out server.pem >/dev/null 2>&1
		# Kafka reads one PEM with the key (PKCS#8) and the chain.
		openssl pkcs8 -topk8 -nocrypt -in server.key -out server.pk8
		cat server.pk8 server.pem ca.pem >server-bundle.pem
		chmod 644 ca.pem server.pem
	) || die "tls: openssl failed"
}

# secret NAME: the password of NAME, made once.
secret() {
	local f="$SECRETS_DIR/$1"
	if [[ ! -s $f ]]; then
		mkdir -p "$SECRETS_DIR"
		chmod 700 "$SECRETS_DIR"
		(umask 077 && openssl rand -hex 24 >"$f")
	fi
	cat "$f"
}

secrets_up() {
	local u
	for u in "${SECURE_USERS[@]}"; do secret "$u" >/dev/null; done
	for u in "${PG_ROLES[@]}"; do secret "pg-$u" >/dev/null; done
}

# secure_env: the lines .run/env gets for the secure endpoints.
secure_env() {
	local addrs=() p
	for p in $(redis_ports); do addrs+=("127.0.0.1:$((p + REDIS_TLS_OFFSET))"); done
	echo "export FLASHSALE_TLS_CA=$(shq "$TLS_DIR/ca.pem")"
	echo "export FLASHSALE_SECRETS_DIR=$(shq "$SECRETS_DIR")"
	echo "export FLASHSALE_SECURE_REDIS=$(shq "$(IFS=,; echo "${addrs[*]}")")"
	if [[ $BROKER == kafka ]]; then echo "export FLASHSALE_SECURE_KAFKA=$(shq "127.0.0.1:$KAFKA_SECURE_PORT")"; fi
	echo "export FLASHSALE_SECURE_DATABASE_URL=$(shq "$PG_SECURE_URL")"
}
