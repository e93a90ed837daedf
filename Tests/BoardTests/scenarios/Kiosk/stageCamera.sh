#!/bin/bash
# A scenario of StageBoardTests (its test reads what this prints): vimc's
# driver unbound mid-recording and bound again.
# Arguments: LEAST (the frames that prove the path ran; no rate is assumed)
least=$1
. board/virtual/waiting.sh
. Tests/BoardTests/scenarios/Kiosk/stage.sh
rec=/var/lib/obscura/recordings
frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null; }
partial_frames() { n=0; for p in /var/lib/obscura/incoming/*.partial; do [ -e "$p" ] && n=$(frames "$p"); done; echo "${n:-0}"; }
obscura ctl record start 2>&1 | sed "s/^/ctl: /"
some() { [ "$(partial_frames)" -ge "$least" ] 2>/dev/null; }
wait_for 120 "$least frames recorded" some
taken_away_and_back vimc vimc.0 partial_frames "$least"
for f in "$rec"/*.mp4; do echo "file=$(basename "$f") frames=$(frames "$f")"; done
# The metrics file is written every few seconds: once it counts the restart.
restart_counted() { grep -q '^obscura_stage_restarts_total{stage="camera"} [1-9]' /run/obscura-metrics/obscura.prom; }
wait_for 60 "the metrics to count the camera's restart" restart_counted
grep -E '^obscura_(stage_restarts_total|stage_gap_seconds_total|recordings_failed_total)' /run/obscura-metrics/obscura.prom | sed 's/^/metric: /'
obscura status | sed 's/^/status: /'
journalctl -u obscura --no-pager -o short-monotonic | grep -E "recording goes on after|camera back after|recording finished|listed again" | sed 's/^/mono: /'
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
