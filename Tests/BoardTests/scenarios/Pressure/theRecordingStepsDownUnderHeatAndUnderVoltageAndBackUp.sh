#!/bin/bash
# The board's side of PressureBoardTests.theRecordingStepsDownUnderHeatAndUnderVoltageAndBackUp: it prints what the test reads.
# Arguments: SETTLE
settle=$1
. board/virtual/waiting.sh
rm -rf /tmp/svc; mkdir -p /tmp/svc
cp board/profiles/virtual.toml /tmp/svc/board.toml
printf '[pressure]\ntemperature_files = ["/tmp/svc/temp"]\nthrottled_file = "/tmp/svc/get_throttled"\nbacklog = false\n' >> /tmp/svc/board.toml
echo 45000 > /tmp/svc/temp; echo 0x0 > /tmp/svc/get_throttled
. Tests/BoardTests/scenarios/service.sh
service_start "/tmp/svc/board.toml" <<T
[recording]
folder = "/tmp/svc/rec"
size = "320x240"
bit_rate = 2000000
segment_seconds = 0
min_free_space_mb = 16
[health]
enabled = false
[pressure]
settle_seconds = $settle
[preview]
enabled = true
T
status() { ask status; }
level() { [ "$(metric "obscura_system_pressure{level=\"$1\"}")" = 1 ]; }
field() { status | grep -o "\"$1\":[^,}]*" | head -n 1; }
frames() { metric obscura_recording_frames; }
# Waits until the recording in progress has N more frames.
more() { n=$(( $(frames) + $1 )); grown() { [ "$(frames)" -ge "$n" ]; }; wait_for 120 "$1 more frames" grown; }
$o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
wait_for 120 "the recording's first frame" said "first frame taken"
more 30
echo 72000 > /tmp/svc/temp
wait_for 60 "fair" level fair
echo "fair: $(field cameraFrameRate) $(field pressureReason) $(field rateStepsDown)"
echo "metrics-fair=$(grep -E '^obscura_system_pressure\{' /tmp/svc/obscura.prom | tr '\n' ' ')"
more 40
echo 0x5 > /tmp/svc/get_throttled
wait_for 60 "critical" level critical
echo "critical: $(field cameraFrameRate) $(field pressureReason) $(field rateStepsDown)"
$o status --socket /tmp/svc/control.sock | grep -E '^(pressure|preview):' | sed 's/^/status-critical: /'
ask record stop > /dev/null
wait_for 120 "the first recording to finish" said "recording finished"
ask record start > /dev/null
started() { status | grep -q '"state":"recording"'; }; wait_for 60 "the second recording" started
echo "second: $(field bitRate)"
more 10
echo 0x0 > /tmp/svc/get_throttled; echo 40000 > /tmp/svc/temp
wait_for 120 "nominal again" level nominal
echo "nominal: $(field cameraFrameRate) $(field rateStepsDown) $(field rateStepsUp)"
echo "steps: $(status | grep -o '"pressureSteps":{[^}]*}')"
$o status --socket /tmp/svc/control.sock | grep -E '^(pressure|preview):' | sed 's/^/status-nominal: /'
more 10
ask record stop > /dev/null
two() { [ "$(grep -c "recording finished" /tmp/svc/log)" -ge 2 ]; }; wait_for 120 "the second recording to finish" two
kill -TERM $p; wait $p
for f in /tmp/svc/rec/*.mp4; do
    echo "file $f"
    echo "frame-times=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\n' ' ')"
    service_marks "$f"
done
grep -E "system pressure|recording finished" /tmp/svc/log | sed 's/^/log: /'
