# Shared shell helpers for hack/demo.sh and test/bench/bench.sh (sourced).

# SIM_LISTENING and KEEPER_STARTED are sed scripts that pull the address out of
# the start-up line of sandboxsim and spacekeeper (both listen on port 0).
SIM_LISTENING='s/.*listening on \(http:[^ ]*\).*/\1/p'
KEEPER_STARTED='s/.*msg="controller started".* http_port=\([0-9]*\).*/\1/p'
# KEEPER_CONNECT: the port of the connect API (controller.connectListen) in that line.
KEEPER_CONNECT='s/.*msg="controller started".* connect_port=\([0-9]*\).*/\1/p'

# log_wait FILE SED_SCRIPT PID: prints what the script extracts from FILE as
# soon as it appears; fails after 30 s or when PID has exited.
log_wait() {
	local file=$1 script=$2 pid=$3 out
	for _ in $(seq 1 300); do
		out=$(sed -n "$script" "$file" 2>/dev/null)
		if [ -n "$out" ]; then
			echo "$out"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
