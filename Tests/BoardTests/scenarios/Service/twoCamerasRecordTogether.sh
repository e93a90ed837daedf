#!/bin/bash
# A scenario of TwoCameraKioskBoardTests (its test reads what this prints): a
# kiosk of the board's two vimc cameras ([cameras.front], [cameras.back]).
# The back camera is not there when the service starts (the doctor says so),
# and joins when it comes; one command records both; each camera's live view
# is its own; the back camera's driver is unbound mid-recording, and the
# front goes on. (Not bound again while the service runs: libcamera's vimc
# pipeline handler does not follow its device's removal, and registering
# the camera's return beside the stale one aborts the process.)
# Arguments: LEAST (frames that prove a camera's path ran; no rate is assumed)
least=$1
. Tests/BoardTests/scenarios/service.sh
service_fresh
service_start virtual <<T
$service_recording
[cameras.front]
id = "platform/vimc.0 Sensor B"
[cameras.back]
id = "platform/vimc.1 Sensor B"
T
echo "missing: $(ask status)"
"$o" doctor --config /tmp/svc/obscura.toml 2>&1 | grep -E "camera (front|back)" | sed 's/^/doctor: /'
second=$(board/virtual/second-camera) || exit 1
echo "second=$second"
opened() { said "camera $second: .* camera=back"; }
wait_for 120 "the back camera to be opened once it is there" opened
ask record start | sed 's/^/start: /'
front() { metric 'obscura_recording_frames{camera="front"}'; }
back() { metric 'obscura_recording_frames{camera="back"}'; }
both() { [ "$(front)" -ge "$least" ] && [ "$(back)" -ge "$least" ]; }
wait_for 180 "$least frames from each camera" both
echo "together: $(ask status)"
# Each camera's live view: the back's by name, the first camera's at live.socket itself.
for who in back first; do
    if [ "$who" = first ]; then set --; else set -- --camera "$who"; fi
    timeout 10 "$o" view-serve --name "probe-$who" --socket /tmp/svc/live.sock "$@" > "/tmp/svc/$who.live" 2>/dev/null
    echo "live-$who: $(head -n 1 "/tmp/svc/$who.live" | cut -c1-80) bytes=$(wc -c < "/tmp/svc/$who.live")"
done
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
ends() { [ "$(grep -c "recording finished: " /tmp/svc/log)" -ge 2 ]; }
wait_for 180 "every file to be finished" ends
for f in /tmp/svc/rec/*.mp4; do
    echo "file=$(basename "$f") frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f")"
done
service_end "cannot record|camera interrupted|live view (started|ended): probe"
