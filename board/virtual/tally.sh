# shellcheck shell=bash
# What a stretch of a board's command cost the board (sourced; bash; on the
# board only):
#
#   . board/virtual/tally.sh
#   tally_start                 from now on
#   tally_report                sets TALLY to one line: "busy B of W s; starts N: n name, ..."
#
# busy: the seconds the board's CPUs spent on anything but idle (from
# /proc/stat), against the wall seconds since tally_start: a busy board has
# no time left for what a test waits on. starts: the programs started
# (execve, from the kernel's sched_process_exec trace event, which
# guest-init traces from boot on the monotonic clock), the most started
# first: under the emulator every start of a program that links many
# libraries costs seconds. tally_report starts the next stretch (it runs in the caller's shell, not a subshell, to keep its
# marks). Stretches may nest: none clears the trace.

_tally_trace=/sys/kernel/tracing
tally_busy() { # the CPUs' busy time in hundredths of a second (USER_HZ), in $REPLY
    local _cpu user nice system _idle _iowait irq softirq steal _rest
    read -r _cpu user nice system _idle _iowait irq softirq steal _rest < /proc/stat
    REPLY=$((user + nice + system + irq + softirq + steal))
}
tally_start() {
    tally_busy; _tally_busy0=$REPLY
    _tally_wall0=$SECONDS
    read -r _tally_t0 _ < /proc/uptime
}
tally_report() {
    local busy starts="" total=0 t1 _
    tally_busy; busy=$((REPLY - _tally_busy0))
    read -r t1 _ < /proc/uptime   # (the report's own programs not counted)
    if [ -d /run/obscura-board ] && [ -r "$_tally_trace/trace" ]; then
        starts=$(awk -v t0="$_tally_t0" -v t1="$t1" '
            / sched_process_exec: / {
                for (i = 1; i < NF; i++) if ($(i + 1) == "sched_process_exec:") break
                if ($i + 0 < t0 + 0 || $i + 0 >= t1 + 0) next
                f = $0; sub(/.*filename=/, "", f); sub(/ .*/, "", f); sub(/.*\//, "", f); n[f]++
            }
            END { for (f in n) print n[f], f }' "$_tally_trace/trace" | sort -rn)
        total=$(awk '{ t += $1 } END { print t + 0 }' <<<"$starts")
        starts=$(head -8 <<<"$starts" | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
    fi
    # shellcheck disable=SC2034  # (read by the script that sources this)
    printf -v TALLY 'busy %d.%02d of %d s; starts %d: %s' $((busy / 100)) $((busy % 100)) $((SECONDS - _tally_wall0)) "$total" "${starts:-(none traced)}"
    tally_busy; _tally_busy0=$REPLY
    _tally_wall0=$SECONDS
    read -r _tally_t0 _ < /proc/uptime
}
