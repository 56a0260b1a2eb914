# shellcheck shell=bash
# demo-lib.sh: what deploy/demo.sh and deploy/demo-slow.sh share. Source it
# with DEMO_NAME set (the prefix of its messages): the processes started are
# kept in pids and stopped on exit; wait_ready waits for a /readyz.

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

wait_ready() { # name url log
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null "$2" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "$DEMO_NAME: $1 did not become ready; last log lines:" >&2
  tail -20 "$3" >&2
  exit 1
}
