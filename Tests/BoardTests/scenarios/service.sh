# shellcheck shell=bash
# `obscura run` on the board as a board scenario starts it (sourced; it
# sources board/virtual/waiting.sh and puts board/virtual on PATH):
#
#   service_fresh                 an empty /tmp/svc for the service's files
#   service_start BOARD [SOCKET [LIVE]] <<T   (below)
#   service_finished              after `ask record stop`: once the
#                                 recording has finished; `f` its (first)
#                                 file, "recordings=N" printed
#   service_marks FILE            a recording's marks (its text track) as
#                                 "srt: …" lines
#   service_end PATTERN           the log's lines of PATTERN (an ERE) and the
#                                 recordings' ends as "log: …"; the service
#                                 stopped (SIGTERM) and waited for
#
# `$service_recording` is a [recording] table a watch's test starts from
# (320x240, one file, the files in /tmp/svc/rec).
#
#   service_start BOARD [SOCKET [LIVE]] <<'T'
#   [recording]
#   folder = "/tmp/svc/rec"
#   ...more tables (e.g. [health])
#   T
#
# Its configuration in /tmp/svc/obscura.toml: on BOARD, with the tables read
# from standard input; photos, the control socket (or SOCKET), the live
# socket (or LIVE) and metrics every second in /tmp/svc. Its log in
# /tmp/svc/log. Ready when service_start returns. Then `$o` is obscura, `$p`
# the service, `said PATTERN` whether its log has it.
#
# What a scenario waits on is read from the log and the metrics file, or
# asked of the control socket with `ask COMMAND` (board/virtual/ask: the
# socket's JSON reply, as `obscura status --json` prints it), never by
# starting `obscura status` over and over: the debug build links some 160
# shared libraries, and starting it costs seconds on the emulated board
# (about 20 s a look when slowed, the service recording beside it), which
# would be the test's measure rather than the service's. `metric NAME` is a
# series' value in the metrics file (0 before it has one; its labels spelled
# as there, e.g. `obscura_system_pressure{level="fair"}`); `holds WATCH
# CONDITION` whether the log last said the watch's condition was declared
# (`picture: dark (…` more often than `picture: dark cleared`). `led` is the
# values the status LED took over two seconds, sorted ("1 ": steady on;
# "0 1 ": blinking), read by the shell itself from gpio-sim's file between
# pauses that start no process under bash (a program started per read costs
# a second when slowed: the scenarios that time a watch are bash scripts).
service_socket=/tmp/svc/control.sock
service_root=${service_root:-$(pwd)}
PATH=$PATH:$service_root/board/virtual; export PATH
# shellcheck source=board/virtual/waiting.sh
. "$service_root/board/virtual/waiting.sh"
# shellcheck disable=SC2034  # (read by the scenarios that source this)
service_recording='[recording]
folder = "/tmp/svc/rec"
size = "320x240"
segment_seconds = 0
min_free_space_mb = 16'
service_fresh() { rm -rf /tmp/svc; mkdir -p /tmp/svc; }
service_start() {
    local board=$1 live=${3:-/tmp/svc/live.sock}
    service_socket=${2:-/tmp/svc/control.sock}
    {
        echo "board = \"$board\""
        cat
        printf '[photo]\nfolder = "/tmp/svc/photos"\n'
        printf '[control]\nsocket = "%s"\n' "$service_socket"
        printf '[live]\nsocket = "%s"\n' "$live"
        printf '[metrics]\nfile = "/tmp/svc/obscura.prom"\ninterval_seconds = 1\n'
    } > /tmp/svc/obscura.toml
    o=$service_root/.build/debug/obscura
    "$o" run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 &
    # shellcheck disable=SC2034  # (the scenario's: the service's pid)
    p=$!
    wait_for 120 "the service to be ready" said ready
}
said() { grep -q "$1" /tmp/svc/log; }
metric() { local v; v=$(awk -v n="$1" '$1 == n { print $2; exit }' /tmp/svc/obscura.prom 2>/dev/null); echo "${v:-0}"; }
ask() { "$service_root/board/virtual/ask" "$service_socket" "$@"; }
led() {
    local f i=0 v
    f=$(gpio-sim value-file status-led)
    while [ $i -lt 20 ]; do read -r v < "$f"; echo "$v"; pause 0.1; i=$((i + 1)); done | sort -u | tr '\n' ' '
}
holds() { awk -v d="$1: $2 (" -v c="$1: $2 cleared" 'index($0, d) { n++ } index($0, c) { m++ } END { exit !(n > m) }' /tmp/svc/log; }
service_finished() {
    local r n=0
    wait_for 180 "the recording to finish" said "recording finished"
    f=""
    for r in /tmp/svc/rec/*.mp4; do
        [ -e "$r" ] || continue
        n=$((n + 1)); [ -n "$f" ] || f=$r
    done
    echo "recordings=$n"
}
service_marks() { ffmpeg -v error -i "$1" -map 0:s:0 -f srt - | sed -E 's/<[^>]*>//g; s/^/srt: /'; }
service_end() {
    grep -E "$1|recording finished" /tmp/svc/log | sed 's/^/log: /'
    kill -TERM "$p"; wait "$p"
}
