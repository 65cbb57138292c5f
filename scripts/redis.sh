#!/usr/bin/env bash
# A private redis-server on a loopback port for the Redis store and replica tests.
#
#   scripts/redis.sh start [PORT]   start one on 127.0.0.1:PORT (default: the first free
#                                   port from 6390); prints its URL, redis://127.0.0.1:PORT/0
#   scripts/redis.sh stop PORT      stop the one started on PORT and remove its files
#   scripts/redis.sh with CMD...    run CMD with AGENTD_TEST_REDIS set: as given, or else to a
#                                   private Redis started for CMD and stopped after it (when
#                                   redis-server is installed); exits with CMD's status
#
# The instance keeps nothing on disk (--save '' --appendonly no); its pidfile and log live
# in ${TMPDIR:-/tmp}/agentd-redis-PORT.
set -euo pipefail

state_dir() { echo "${TMPDIR:-/tmp}/agentd-redis-$1"; }

# answers PORT: whether a Redis on 127.0.0.1:PORT answers PING.
answers() {
	local line
	{ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
	printf 'PING\r\n' >&3
	IFS= read -r -t 1 line <&3 || line=
	exec 3>&-
	[[ $line == +PONG* ]]
}

# in_use PORT: whether anything listens on 127.0.0.1:PORT.
in_use() { { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null && exec 3>&-; }

start() {
	command -v redis-server >/dev/null || { echo "redis.sh: redis-server is not installed" >&2; return 1; }
	local port=${1:-}
	if [[ -z $port ]]; then
		for port in $(seq 6390 6399) ''; do
			[[ -n $port ]] && ! in_use "$port" && break
		done
		[[ -n $port ]] || { echo "redis.sh: no free port in 6390-6399" >&2; return 1; }
	elif in_use "$port"; then
		echo "redis.sh: port $port is in use" >&2
		return 1
	fi
	local dir
	dir=$(state_dir "$port")
	mkdir -p "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log"
	for _ in $(seq 100); do
		if answers "$port"; then
			echo "redis://127.0.0.1:$port/0"
			return 0
		fi
		sleep 0.1
	done
	echo "redis.sh: redis-server on port $port does not answer; log:" >&2
	cat "$dir/redis.log" >&2 || true
	stop "$port"
	return 1
}

stop() {
	local port=${1:?usage: redis.sh stop PORT} dir pid
	dir=$(state_dir "$port")
	if [[ -f $dir/redis.pid ]]; then
		pid=$(cat "$dir/redis.pid")
		if [[ $(ps -p "$pid" -o comm= 2>/dev/null) == redis-server* ]]; then
			kill "$pid"
			for _ in $(seq 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
	fi
	rm -rf "$dir"
}

with() {
	if [[ -n ${AGENTD_TEST_REDIS:-} ]]; then
		exec "$@"
	fi
	if ! command -v redis-server >/dev/null; then
		echo "redis.sh: redis-server is not installed: the Redis suites will skip (apt-get install redis-server)" >&2
		exec "$@"
	fi
	local url port status
	url=$(start)
	port=${url##*:}
	port=${port%%/*}
	# shellcheck disable=SC2064 # expand now: the locals are gone when the trap runs
	trap "stop $port" EXIT
	echo "redis.sh: AGENTD_TEST_REDIS=$url" >&2
	set +e
	AGENTD_TEST_REDIS=$url "$@"
	status=$?
	set -e
	return "$status"
}

cmd=${1:-}
shift || true
case $cmd in
start | stop | with) "$cmd" "$@" ;;
*)
	echo "usage: redis.sh start [PORT] | stop PORT | with CMD..." >&2
	exit 2
	;;
esac
