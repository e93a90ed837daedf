#!/bin/sh
# The board's side of ServiceBoardTests.photosDuringARecordingCostNoMoreThanTheRecordersQueue: it prints what the test reads.
rm -rf /tmp/svc; mkdir -p /tmp/svc
cat > /tmp/svc/obscura.toml <<'T'
board = "virtual"
[recording]
folder = "/tmp/svc/rec"
size = "160x120"
segment_seconds = 0
min_free_space_mb = 16
[photo]
folder = "/tmp/svc/photos"
raw = true
[control]
socket = "/tmp/svc/control.sock"
[live]
socket = "/tmp/svc/live.sock"
T
o=.build/debug/obscura
"$o" run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 &
p=$!
. board/virtual/waiting.sh
# Whether the service has said PATTERN at least N times.
said() { [ "$(grep -c "$1" /tmp/svc/log)" -ge "$2" ]; }
wait_for 30 "the service to be ready" said ready 1 || sed 's/^/log: /' /tmp/svc/log
press() { board/virtual/gpio-sim press "$1"; sleep 0.15; board/virtual/gpio-sim release "$1"; }  # (a press holds the button 0.15 s: the stimulus)
press record-button
wait_for 30 "the recording's encoder" said "obscura: encoder " 1 || sed 's/^/log: /' /tmp/svc/log
for i in 1 2 3; do
    sleep 1  # (a photo a second into the recording: the stimulus's pace)
    press photo-button
    wait_for 30 "photo $i" said "obscura: photo /tmp" "$i" || sed 's/^/log: /' /tmp/svc/log
done
sleep 1  # (the recording goes on a second after the last photo)
press record-button
wait_for 30 "the recording to finish" said "recording finished" 1 || sed 's/^/log: /' /tmp/svc/log
kill -TERM "$p"; wait "$p"
for f in /tmp/svc/photos/*; do echo "photo-file ${f##*/}"; done
grep -E "recording finished|output queue holds|raw stream|obscura: photo " /tmp/svc/log
for f in /tmp/svc/rec/*.mp4; do
    echo "frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
