#!/bin/sh
# The board's side of ServiceBoardTests.aRecorderThatCannotKeepUpStepsTheCameraDown:
# it prints what the test reads.
# Arguments: CAMERA (pattern: the test pattern at 1280x720; vimc: vimc at 640x480)
camera=$1
. board/virtual/waiting.sh
rm -rf /tmp/svc; mkdir -p /tmp/svc
if [ "$camera" = pattern ]; then id=synthetic size=1280x720; else id="" size=640x480; fi
cat > /tmp/svc/pattern.toml <<T
[board]
name = "Test pattern"
[camera]
id = "$id"
size = "$size"
frame_rate = 30
pixel_format = "NV12"
[encoder]
preference = ["libx264"]
preset = "medium"
bit_rate = 4000000
[audio]
device = "none"
T
. Tests/BoardTests/scenarios/service.sh
service_start "/tmp/svc/pattern.toml" <<T
[recording]
folder = "/tmp/svc/rec"
segment_seconds = 0
min_free_space_mb = 16
T
$o ctl --socket /tmp/svc/control.sock record start | sed 's/^/start: /'
stepped() { grep -q "steps.* down from" /tmp/svc/log; }
wait_for 150 "a step down" stepped
if [ "$camera" = vimc ]; then
    paced() { grep -qE '^obscura_paced_frames_total [1-9]' /tmp/svc/obscura.prom; }
    wait_for 120 "a frame left out for the pace" paced
fi
$o status --socket /tmp/svc/control.sock | sed 's/^/status: /'
grep -E '^obscura_(camera_frame_rate|configured_frame_rate|frame_rate_steps_total|paced_frames_total)' /tmp/svc/obscura.prom | sed 's/^/metric: /'
$o ctl --socket /tmp/svc/control.sock record stop > /dev/null
finished() { grep -q "recording finished" /tmp/svc/log; }
wait_for 120 "the recording to finish" finished
kill -TERM $p; wait $p
for f in /tmp/svc/rec/*.mp4; do
    echo "frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
sed 's/^/log: /' /tmp/svc/log
