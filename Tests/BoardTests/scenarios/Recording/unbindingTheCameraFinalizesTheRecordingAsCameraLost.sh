#!/bin/sh
# The board's side of RecordingBoardTests.unbindingTheCameraFinalizesTheRecordingAsCameraLost: it prints what the test reads.
.build/debug/obscura record --size 640x480 --duration 30 --output lost.mp4 > r.out 2> r.err &
p=$!
. board/virtual/waiting.sh
encoding() { grep -q "encoder" r.err; }; wait_for 60 "the recorder to name its encoder" encoding
# The camera goes once two seconds and five frames are recorded (the
# progress line says so), whatever the camera's pace in this run.
enough() { tail -n 1 r.err | tr -d , | awk '$2 == "recording" && $3 >= 2 && $5 >= 5 { ok = 1 } END { exit !ok }'; }
wait_for 120 "two seconds and five frames recorded" enough
echo vimc.0 > /sys/bus/platform/drivers/vimc/unbind
wait "$p"; echo "status=$?"
cat r.out; for f in lost.mp4*; do echo "$f"; done
ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of default=nw=1 lost.mp4
echo vimc.0 > /sys/bus/platform/drivers/vimc/bind
rm -f lost.mp4* r.out r.err
