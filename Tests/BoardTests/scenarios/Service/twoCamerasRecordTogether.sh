#!/bin/bash
# A scenario of ServiceBoardTests.twoCamerasRecordTogether (its test reads
# what this prints): a kiosk of the board's two vimc cameras
# ([cameras.front], [cameras.back]) records both at one command; the back
# camera's driver is unbound mid-recording, and the front goes on.
# Arguments: LEAST (frames that prove a camera's path ran; no rate is assumed)
least=$1
. Tests/BoardTests/scenarios/service.sh
second=$(board/virtual/second-camera) || exit 1
service_fresh
service_start virtual <<T
$service_recording
[cameras.front]
id = "platform/vimc.0 Sensor B"
[cameras.back]
id = "$second"
T
ask record start | sed 's/^/start: /'
front() { metric 'obscura_recording_frames{camera="front"}'; }
back() { metric 'obscura_recording_frames{camera="back"}'; }
both() { [ "$(front)" -ge "$least" ] && [ "$(back)" -ge "$least" ]; }
wait_for 180 "$least frames from each camera" both
echo "together: $(ask status)"
# The back camera goes away; the front's file must go on and keep every frame.
at=$(front)
echo "unbound at front=$at"
echo vimc.1 > /sys/bus/platform/drivers/vimc/unbind
back_finished() { said "recording finished: .*-back\.mp4"; }
wait_for 180 "the back camera's file to be finished" back_finished
more=$((at + least))
going_on() { [ "$(front)" -ge "$more" ]; }
wait_for 180 "the front camera to record $least more frames" going_on
echo "apart: $(ask status)"
ask record stop | sed 's/^/stop: /'
front_finished() { said "recording finished: .*-front\.mp4"; }
wait_for 180 "the front camera's file to be finished" front_finished
for f in /tmp/svc/rec/*.mp4; do
    echo "file=$(basename "$f") frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f")"
done
service_end "cannot record|camera interrupted|camera back"
echo vimc.1 > /sys/bus/platform/drivers/vimc/bind 2>/dev/null
board/virtual/second-camera --remove
