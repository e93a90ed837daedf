#!/bin/sh
# The board's side of TimeBoardTests.aBoardBootedIn1970NamesNothingWithAWrongTimeAndRenamesOnceTheClockIsSet: it prints what the test reads.
rec=/var/lib/obscura/recordings
frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
systemctl stop obscura
real=$(date +%s.%N); real_up=$(uptime_s)
date -s @86400 > /dev/null          # 1970-01-02
rm -f /run/systemd/timesync/synchronized
systemctl start obscura
obscura status | grep '^clock:' | sed 's/^/before: /'
start_up=$(uptime_s)
obscura ctl record start > /dev/null
. board/virtual/waiting.sh
five_frames() {
    p=""
    for f in /var/lib/obscura/incoming/*.partial; do [ -e "$f" ] && { p=$f; break; }; done
    [ -n "$p" ] && [ "$(frames "$p")" -ge 5 ] 2>/dev/null
}
wait_for 180 "5 frames in the recording's file" five_frames
echo "partial=$(basename "$p")"
# The clock is set: a step of 56 years in the middle of the recording.
now=$(echo "$real + $(uptime_s) - $real_up" | bc -l 2>/dev/null || awk "BEGIN { printf \"%.3f\", $real + $(uptime_s) - $real_up }")
date -s "@$now" > /dev/null
mkdir -p /run/systemd/timesync && touch /run/systemd/timesync/synchronized
synchronised() { obscura status | grep -q '^clock: synchronised'; }; wait_for 60 "the service to see the clock synchronised" synchronised
obscura status | grep '^clock:' | sed 's/^/after: /'
# Where the clock now stands against the uptime (the uptime read
# just before and just after the clock, the middle taken): the
# step lands late by however long `date -s` took to start, which
# a slowed board makes seconds; the service maps times with this.
read -r u1 _ < /proc/uptime; wall=$(date +%s.%N); read -r u2 _ < /proc/uptime
offset=$(awk "BEGIN { printf \"%.3f\", $wall - ($u1 + $u2) / 2 }")
echo "read-within=$(awk "BEGIN { printf \"%.3f\", $u2 - $u1 }")"
echo "offset=$offset intended=$(awk "BEGIN { printf \"%.3f\", $real - $real_up }")"
sleep 2  # (the recording goes on two seconds on the clock that was set)
stop_up=$(uptime_s)
obscura ctl record stop > /dev/null
renamed() {
    for f in "$rec"/obscura-boot-*; do [ -e "$f" ] && return 1; done
    for f in "$rec"/*.sha256; do [ -e "$f" ] && return 0; done
    return 1
}
wait_for 60 "the boot-named file renamed and finished" renamed
# Where the boot name's second (when the service began the
# recording) falls on the right clock.
boot_s=$(echo "$p" | sed -E 's/.*obscura-boot-[0-9a-f]+-0*([0-9]+)-.*/\1/')
for d in -1 0 1; do
    echo "expected=$(date -u -d "@$(awk "BEGIN { printf \"%d\", $offset + $boot_s + $d }")" +obscura-%Y%m%d-%H%M%S)"
done
echo "started=$start_up stopped=$stop_up"
for f in "$rec"/*.mp4; do
    echo "file=$(basename "$f") frames=$(frames "$f")"
    echo "pts=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | sort -n | tr '\n' ' ')"
    echo "created=$(ffprobe -v error -show_entries format_tags=creation_time -of csv=p=0 "$f")"
done
(cd "$rec" && sha256sum -c ./*.sha256 | sed 's/^/sum: /')
# A recording made once the clock is known: a wall-clock name and creation time.
echo "asked=$(date -u +%s.%N)"
obscura ctl record start > /dev/null
sleep 3  # (a recording of three seconds)
obscura ctl record stop > /dev/null
echo "now=$(date -u +%s.%N)"
for f in "$rec"/*.mp4; do echo "second=$(basename "$f") created=$(ffprobe -v error -show_entries format_tags=creation_time -of csv=p=0 "$f")"; done
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
# The same lines with their CLOCK_MONOTONIC seconds ("[  99.867006] host obscura[439]: …").
journalctl -u obscura --no-pager -o short-monotonic | grep -v "thread priority" | sed 's/^/monotonic: /'
