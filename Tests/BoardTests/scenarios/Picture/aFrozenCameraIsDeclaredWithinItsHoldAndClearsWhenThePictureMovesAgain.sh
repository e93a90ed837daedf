#!/bin/bash
# The board's side of PictureBoardTests.aFrozenCameraIsDeclaredWithinItsHoldAndClearsWhenThePictureMovesAgain: it prints what the test reads.
# Arguments: HOLD CLEAR RATE
hold=$1 clear=$2 rate=$3
. Tests/BoardTests/scenarios/service.sh
service_fresh
service_start virtual <<T
$service_recording
[health]
conditions = ["frozen"]
hold_seconds = $hold
clear_seconds = $clear
frames_per_second = $rate
sound_conditions = []
T
now() { read -r t _ < /proc/uptime; echo "$t"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; }
sub=
for d in /sys/class/video4linux/v4l-subdev*; do [ "$(cat "$d/name")" = "Sensor B" ] && sub=/dev/${d##*/}; done
echo "subdev=$sub"
has() { holds picture "$1"; }
lacks() { ! holds picture "$1"; }
frames() { metric obscura_recording_frames; }
more() { n=$(( $(frames) + $1 )); grown() { [ "$(frames)" -ge "$n" ]; }; wait_for 120 "$1 more frames" grown; }
# A live scene: the sensor's brightness changed 20 times a second
# (VIDIOC_S_CTRL on its subdevice, as v4l2-ctl sets it, from one
# process: a v4l2-ctl per change comes a second or more apart on
# the slowed board, and looks that far apart see the same picture).
# (It says when it made its first change: /tmp/svc/changing.)
live() { rm -f /tmp/svc/still /tmp/svc/changing; perl -e '
    open(my $f, "+<", $ARGV[0]) or die "open $ARGV[0]: $!";
    for (my $i = 0; ! -e "/tmp/svc/still"; $i++) {
        my $control = pack("LL", 0x00980900, 64 + $i % 128);   # V4L2_CID_BRIGHTNESS, a value
        ioctl($f, 0xc008561c, $control) or die "VIDIOC_S_CTRL brightness: $!";
        if ($i == 0) { open(my $t, ">", "/tmp/svc/changing") or die "changing: $!"; close($t); }
        select(undef, undef, undef, 0.05);
    }' "$sub" & lp=$!; }
changing() { [ -e /tmp/svc/changing ]; }
still() { touch /tmp/svc/still; wait $lp; }
$o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
wait_for 120 "the recording's first frame" said "first frame taken"
live
more 90
echo "live-lacks-frozen=$(lacks frozen && echo yes)"
# The scene stops changing between these two readings (the
# lower bound from the first, the upper from the second).
e=$(now); still; a=$(now)
wait_closely 60 "frozen to be declared" has frozen; echo "declared-frozen=$(since "$a")"; echo "declared-frozen-early=$(since "$e")"
has frozen; echo "poll-frozen=$(since "$a")"
$o status --socket /tmp/svc/control.sock | grep '^picture:' | sed 's/^/status-frozen: /'
shown() { [ "$(metric 'obscura_picture_condition{condition="frozen"}')" = 1 ]; }
wait_for 10 "the metrics to show frozen" shown
echo "metrics-frozen=$(grep -E '^obscura_picture_condition\{' /tmp/svc/obscura.prom | tr '\n' ' ')"
# (The upper bound read from after the scene's first change.)
live; wait_for 60 "the scene to change" changing; a=$(now)
wait_closely 60 "frozen to clear" lacks frozen; echo "cleared-frozen=$(since "$a")"
# Live until the recording has ended (a slowed board takes longer
# than the hold to stop it).
ask record stop | sed 's/^/ctl: /'
service_finished
still
echo "frame-times=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\n' ' ')"
service_marks "$f"
service_end "picture: "
