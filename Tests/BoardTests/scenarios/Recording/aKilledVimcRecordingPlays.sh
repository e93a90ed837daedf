#!/bin/sh
# The board's side of RecordingBoardTests.aKilledVimcRecordingPlays: it prints what the test reads.
.build/debug/obscura record --size 640x480 --duration 30 --output killed.mp4 >/dev/null 2> r.err &
p=$!
. board/virtual/waiting.sh
# Killed once three seconds and four frames are recorded (the
# progress line says so), whatever the camera's pace in this run.
enough() { tail -n 1 r.err | tr -d , | awk '$2 == "recording" && $3 >= 3 && $5 >= 4 { ok = 1 } END { exit !ok }'; }
wait_for 120 "three seconds and four frames recorded" enough
kill -9 $p; wait $p
ls killed.mp4*
ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames -of default=nw=1 killed.mp4.partial
ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 killed.mp4.partial | sed 's/^/pts=/'
rm -f killed.mp4* r.err
