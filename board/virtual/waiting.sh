# Waiting for an event on the board, from a test's script (sourced):
#
#   . board/virtual/waiting.sh
#   wait_for SECONDS "what is awaited" COMMAND [ARGS...]
#
# Runs COMMAND every 0.2 s until it succeeds or SECONDS have passed on the
# board's monotonic clock (however long each try took). On giving up it says
# what it waited for, on standard output ("gave up after N s waiting for …")
# so the test's failure shows it, with the service's last journal lines
# ("gave-up journal: …") when it runs under systemd, and returns 1.
wait_for() {
    local bound=$1 what=$2 start now
    shift 2
    read -r start _ < /proc/uptime
    while ! "$@"; do
        read -r now _ < /proc/uptime
        if awk -v a="$start" -v b="$now" -v s="$bound" 'BEGIN { exit !(b - a >= s) }'; then
            echo "gave up after $bound s waiting for $what"
            journalctl -u obscura -n 40 --no-pager -o short-monotonic 2>/dev/null | sed 's/^/gave-up journal: /'
            return 1
        fi
        sleep 0.2
    done
}
