# cpu.sh: where the CPU goes while one wrk row runs, per group of processes,
# from /proc (sourced by bench/peers.sh; functions only).
#
#   cpu_watch GROUP PID...   count PIDs' CPU under GROUP (a name without spaces)
#   cpu_redis_nodes PORT...  watch the cluster nodes on PORTs as redis-masters
#                            and redis-replicas (their roles now)
#   cpu_snap                 remember every watched process's CPU and the machine's
#   cpu_report               print each group's share of the machine since
#                            cpu_snap (100 % = every core busy), then "rest"
#                            (wrk, the kernel, anything not watched) and idle
#   wrk_ready PORT           wait until wrk holds its connections to PORT (its
#                            init, which formats every request first, takes
#                            seconds of its own)
#   cpu_during PORT SECS     wrk_ready PORT, then cpu_snap, SECS, cpu_report
#                            (its lines starting with # are for cpu_per)
#   cpu_per FILE RATE GROUP... µs of CPU per request spent by GROUPs in the
#                            cpu_during output FILE, at RATE requests/s
#
# And what bench/peers.sh and deploy/sizing.sh both read around a row:
#
#   open_sales_warning       warn when other open sales load the stack
#   repl_cmds PORT...        the commands the replicas on PORTs have run
#   reserve_calls ADMIN      a gateway's reserve script calls and reservations
#
# And what both need before the first row:
#
#   need_debian WHO "PKG..." CHECK...
#                            install the Debian packages PKG (as root) unless
#                            every CHECK is there: a command, or a file
#
# Figures are shares of the whole machine, so they add up to 100 % with idle.

declare -A CPU_GROUP=()    # pid -> group
declare -A CPU_T0=()       # pid -> ticks at cpu_snap
CPU_ORDER=()               # groups in the order first watched
CPU_BUSY0=0 CPU_ALL0=0

cpu_watch() {
  local g=$1 p; shift
  [[ " ${CPU_ORDER[*]} " == *" $g "* ]] || CPU_ORDER+=("$g")
  for p in "$@"; do [[ -n $p ]] && CPU_GROUP[$p]=$g; done
}

cpu_redis_nodes() {
  local port pid role
  for port in "$@"; do
    pid=$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}' || true)
    role=$(redis-cli -p "$port" role 2>/dev/null | head -1 || true)
    [[ -n $pid ]] || continue
    if [[ $role == master ]]; then cpu_watch redis-masters "$pid"; else cpu_watch redis-replicas "$pid"; fi
  done
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# cpu_machine prints the machine's busy and total ticks (steal counts as busy:
# the cores were not ours to use).
cpu_machine() { head -1 /proc/stat | awk '{busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6}'; }

cpu_snap() {
  local p
  for p in "${!CPU_GROUP[@]}"; do CPU_T0[$p]=$(cpu_ticks "$p"); done
  read -r CPU_BUSY0 CPU_ALL0 < <(cpu_machine)
}

cpu_report() {
  local p g busy all line="" sum=0
  declare -A d=()
  for p in "${!CPU_GROUP[@]}"; do
    g=${CPU_GROUP[$p]}
    d[$g]=$(( ${d[$g]:-0} + $(cpu_ticks "$p") - ${CPU_T0[$p]:-0} ))
  done
  read -r busy all < <(cpu_machine)
  all=$(( all - CPU_ALL0 )); busy=$(( busy - CPU_BUSY0 ))
  (( all > 0 )) || return 0
  for g in "${CPU_ORDER[@]}"; do
    line+=$(printf '%s %d%%, ' "$g" $(( 100 * ${d[$g]:-0} / all )))
    sum=$(( sum + ${d[$g]:-0} ))
  done
  printf '    cpu (share of both cores): %srest %d%%, idle %d%%\n' "$line" \
    $(( 100 * (busy - sum) / all )) $(( 100 * (all - busy) / all ))
  # For cpu_per: each group's ticks, machine-readable.
  for g in "${CPU_ORDER[@]}"; do printf '#ticks %s %d\n' "$g" "${d[$g]:-0}"; done
}

# cpu_per FILE RATE GROUP...: the CPU in µs per request that GROUPs spent
# over cpu_during's window (FILE its output, RATE the requests per second over
# the run).
cpu_per() {
  local f=$1 rate=$2; shift 2
  local secs; secs=$(awk '$1 == "#secs" {print $2}' "$f")
  awk -v hz="$(getconf CLK_TCK)" -v rate="$rate" -v secs="${secs:-0}" -v groups=" $* " '
    $1 == "#ticks" && index(groups, " " $2 " ") {t += $3}
    END {if (rate > 0 && secs > 0) printf "%.1f", t / hz * 1e6 / (rate * secs); else printf "nan"}' "$f"
}

# wrk_ready PORT waits (up to 30 s, for wrk's init) until a running wrk holds
# its connections to PORT: its own sockets (-p), not ones an earlier run left.
wrk_ready() {
  local i
  for i in $(seq 600); do
    (( $(ss -Htnp state established "( dport = :$1 )" 2>/dev/null | grep -c '"wrk"') >= 32 )) && return 0
    sleep 0.05
  done
}

cpu_during() {
  wrk_ready "$1"
  cpu_snap
  sleep "$2"
  cpu_report
  echo "#secs $2"
}

# open_sales_warning: sales left open on the stack (a make test leaves
# hundreds, open for an hour) cost every gateway a fence beat per shard twice
# a second and its relay a poll: measured, a third of both cores. Say so
# before measuring.
open_sales_warning() {
  local live
  # (none to list, not even the schema, right after make reset)
  live=$({ bin/flashctl sale list --status SCHEDULED,ACTIVE,SOLD_OUT,PAUSED 2>/dev/null || true; } |
    awk 'NR > 1 && NF > 8 {n++; s += $(NF - 3)} END {print n + 0, s + 0}')
  if [ "${live#* }" -gt 24 ]; then
    echo "WARNING: ${live% *} sales with ${live#* } shards are open on this stack; their fence beats and relay polls are in these figures (make reset empties the stack)" >&2
  fi
}

# repl_cmds PORT...: the commands the replicas on PORTs have run (INFO
# commandstats: what their masters replicated), less the INFO and ROLE the
# scripts send them.
repl_cmds() {
  local p
  for p in "$@"; do redis-cli -p "$p" info commandstats || true; done | tr -d '\r' |
    awk -F'[=,:]' '/^cmdstat_/ && $1 != "cmdstat_info" && $1 != "cmdstat_role" {s += $3} END {print s + 0}'
}

# The stack's six Redis nodes, for sizing.sh and ablation.sh: all nodes' CPU
# seconds; the replicas and the masters; the masters' replication stream
# (bytes, master_repl_offset); each node's port, role and CPU seconds.
redis_cpu() { for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p info cpu 2>/dev/null || true; done | awk -F: '/used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
replicas() { for p in 7001 7002 7003 7004 7005 7006; do [ "$(redis-cli -p $p role 2>/dev/null | head -1)" != slave ] || echo $p; done; }
masters() { for p in 7001 7002 7003 7004 7005 7006; do [ "$(redis-cli -p $p role 2>/dev/null | head -1)" != master ] || echo $p; done; }
repl_bytes() { for p in $(masters); do redis-cli -p $p info replication; done | awk -F: '/^master_repl_offset:/ {s += $2} END {print s + 0}'; }
node_cpu() { for p in 7001 7002 7003 7004 7005 7006; do
  local role; role=$(redis-cli -p $p role 2>/dev/null | head -1 || true)
  echo "$p ${role:-down} $( (redis-cli -p $p info cpu 2>/dev/null || true) | tr -d '\r' | awk -F: '/used_cpu_(sys|user):/ {s += $2} END {print s + 0}')"; done; }

# reserve_calls ADMIN: the gateway's (admin address ADMIN) reserve script
# calls and the reservations they carried, "calls reservations".
reserve_calls() {
  curl -fsS "http://$1/metrics" | awk '/^flashsale_gateway_reserve_calls_total / {c = $2}
    /^flashsale_gateway_reserve_call_reservations_total / {r = $2} END {printf "%d %d", c, r}'
}

# need_debian WHO "PKG..." CHECK...: install the Debian packages PKG, as
# root, the way `make up` installs the stack's, unless every CHECK is there
# (a command on PATH, or a file when it holds a slash); not root, it stops
# with the apt-get line to run. WHO names the script in its messages.
need_debian() {
  local who=$1 pkgs=$2 c missing=0
  shift 2
  for c in "$@"; do
    if [[ $c == */* ]]; then [ -e "$c" ] || missing=1; else command -v "$c" >/dev/null || missing=1; fi
  done
  [ $missing = 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$who: missing tools; as root run: apt-get install -y $pkgs" >&2
    exit 1
  fi
  echo "$who: installing Debian packages: $pkgs" >&2
  # A package that ships a service (nginx-light: a system nginx on port 80)
  # would start it; the scripts run their own. policy-rc.d (Debian's
  # invoke-rc.d hook) keeps every package from starting a service while it
  # installs; one already there is kept.
  local own_policy=0 rc=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
  fi
  # shellcheck disable=SC2086 # the package list splits on purpose
  (apt-get install -y -q $pkgs >/dev/null 2>&1 || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs >/dev/null; }) || rc=1
  [ $own_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ $rc = 0 ] || { echo "$who: apt-get install $pkgs failed" >&2; exit 1; }
}
