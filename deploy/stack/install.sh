# shellcheck shell=bash
# install.sh: installing the Debian packages the stack and the tests need.
#
# ensure_pkg CMD PKG [PKG...] is the one way to depend on a tool: when CMD is not on
# PATH it apt-installs PKG (as root), or, not root, stops with the exact apt-get line
# to run. Service files call it for their own servers (redis.sh, postgres.sh,
# kafka.sh); tools that no service owns (a browser for the page tests, promtool for
# the alert rules) go in STACK_TOOLS below, which `up` installs before the services.

# STACK_TOOLS: "CMD PKG" pairs that `up` ensures; add a line to add a tool.
STACK_TOOLS=(
	"chromium chromium" # headless Chromium: the bench report and sale page tests
	"promtool prometheus" # promtool check/test rules and a real Prometheus for the dashboard test
	"iptables iptables"   # the chaos run's network partitions (deploy/testenv.Partitions)
)

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

# ensure_pkg CMD PKG [PKG...]: make sure CMD exists, installing the Debian package(s)
# if root; otherwise die naming what to install.
ensure_pkg() {
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null 2>&1 && return 0
	wait_apt
	command -v "$cmd" >/dev/null 2>&1 && return 0
	is_root || die "'$cmd' is missing: install the Debian package '$*' (sudo apt-get install -y $*)"
	install_pkg "$@"
	command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' still missing after installing $*"
}

# install_pkg PKG...: apt-get install, with one apt-get update and retry on failure.
install_pkg() {
	log "installing Debian package(s): $*"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >"$RUN/apt.log" 2>&1; then
		log "install failed; running apt-get update first"
		DEBIAN_FRONTEND=noninteractive apt-get update >>"$RUN/apt.log" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >>"$RUN/apt.log" 2>&1 ||
			{ tail_log "$RUN/apt.log"; die "apt-get install $* failed"; }
	fi
}

# STACK_FONTS: "LANG PKG" pairs: a font for each language the sale page speaks, so the
# browser tests' screenshots show its script rather than empty boxes.
STACK_FONTS=(
	"ja fonts-ipafont-gothic"
)

# ensure_font LANG PKG: make sure fontconfig knows a font for LANG, installing PKG if root.
ensure_font() {
	[[ -n "$(fc-list ":lang=$1" 2>/dev/null)" ]] && return 0
	is_root || die "no font for language '$1': install the Debian package '$2' (sudo apt-get install -y $2)"
	install_pkg "$2"
}

# tools_up: ensure every STACK_TOOLS and STACK_FONTS entry, unless STACK_TESTS=0
# (make demo: the services only, none of the tests' tools).
tools_up() {
	local entry
	[[ ${STACK_TESTS:-1} == 0 ]] && return 0
	for entry in "${STACK_TOOLS[@]}"; do
		# shellcheck disable=SC2086 # "CMD PKG..." splits on purpose
		ensure_pkg $entry
	done
	for entry in "${STACK_FONTS[@]}"; do
		# shellcheck disable=SC2086 # "LANG PKG" splits on purpose
		ensure_font $entry
	done
}
