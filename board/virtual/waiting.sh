# shellcheck shell=bash
# Waiting for an event on the board, from a test's script (sourced; sh or bash):
#
#   . board/virtual/waiting.sh
#   wait_for SECONDS "what is awaited" COMMAND [ARGS...]   (whole seconds)
#   wait_closely SECONDS "what is awaited" COMMAND [ARGS...]
#   pause SECONDS
#
# wait_for runs COMMAND until it succeeds or SECONDS have passed, pausing
# between looks as long as the last look took (0.2 s to 2 s: a look that
# starts programs costs seconds on the emulated board, and looks 0.2 s apart
# kept a one-CPU board busy with looking; wait_closely always pauses 0.2 s,
# for a wait whose own lag a test measures: the watches' declarations), on
# the board's monotonic clock (however long each try took), times
# OBSCURA_WAIT_FACTOR (board/virtual/run sets it: 2 on a board slowed to
# half a core or sharing the host with another board). On giving up
# it says what it waited for, on standard output ("gave up after N s waiting
# for …") so the test's failure shows it, with the service's last journal
# lines ("gave-up journal: …") when it runs under systemd, and returns 1.
#
# Under bash the wait itself starts no process: the clock is read from
# /proc/uptime and the pause is a read that times out on a FIFO no one
# writes (`pause`). On a slowed board each process started costs about a
# second while the service records, so a wait's own processes made every
# look seconds late. Under another sh (dash has no read -t) a pause is
# sleep(1).

# uptime_cs: the board's monotonic clock in hundredths of a second, in $REPLY.
uptime_cs() {
    read -r REPLY _ < /proc/uptime
    REPLY=${REPLY%.*}${REPLY#*.}
    while [ "${REPLY#0}" != "$REPLY" ] && [ ${#REPLY} -gt 1 ]; do REPLY=${REPLY#0}; done
}

# pause SECONDS: sleeps (fractions allowed).
if [ -n "${BASH_VERSION:-}" ]; then
    _pause_fd=
    pause() {
        if [ -z "$_pause_fd" ]; then
            local fifo=/tmp/.pause.$$.$RANDOM
            mkfifo "$fifo" && exec {_pause_fd}<>"$fifo" && rm -f "$fifo"
        fi
        read -r -t "$1" -u "$_pause_fd" _ || true
    }
else
    pause() { sleep "$1"; }
fi

wait_for() {
    local bound=$(( $1 * ${OBSCURA_WAIT_FACTOR:-1} )) what=$2 start tried took
    shift 2
    uptime_cs; start=$REPLY
    while :; do
        uptime_cs; tried=$REPLY
        "$@" && return 0
        uptime_cs
        if [ $((REPLY - start)) -ge $((bound * 100)) ]; then
            echo "gave up after $bound s waiting for $what"
            journalctl -u obscura -n 40 --no-pager -o short-monotonic 2>/dev/null | sed 's/^/gave-up journal: /'
            return 1
        fi
        # As long as the look took (0.2 s to 2 s): looks that start
        # programs keep at most half of the board busy, not all of it, and
        # leave the rest to what is awaited.
        took=$((REPLY - tried))
        [ $took -ge 20 ] || took=20
        [ $took -le "${_wait_most_cs:-200}" ] || took=${_wait_most_cs:-200}
        pause "$((took / 100)).$((took % 100 / 10))$((took % 10))"
    done
}

wait_closely() {
    local _wait_most_cs=20
    wait_for "$@"
}
