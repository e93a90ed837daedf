#!/bin/bash
# The board's side of PictureBoardTests.aCoveredAndADarkLensAreDeclaredWithinTheirHoldAndClearWhileTheRecordingGoesOn: it prints what the test reads.
# Arguments: HOLD CLEAR
hold=$1 clear=$2
. Tests/BoardTests/scenarios/service.sh
service_fresh
service_start virtual <<T
$service_recording
partial_folder = "/tmp/svc/incoming"
[health]
hold_seconds = $hold
clear_seconds = $clear
# The loopback's silence is SoundBoardTests' part.
sound_conditions = []
T
now() { read -r t _ < /proc/uptime; echo "$t"; }
sub=
for d in /sys/class/video4linux/v4l-subdev*; do [ "$(cat "$d/name")" = "Sensor B" ] && sub=/dev/${d##*/}; done
echo "subdev=$sub"
# The menu's entries by name (tpg's: "100% White", "100% Black").
entry() { v4l2-ctl -d "$sub" --list-ctrls-menus | sed -nE "s/^[[:space:]]+([0-9]+): $1\$/\1/p" | head -n 1; }
white=$(entry "100% White"); black=$(entry "100% Black")
echo "entries=white:$white black:$black"
status() { ask status; }
has() { holds picture "$1"; }
lacks() { ! holds picture "$1"; }
measured() { status | grep -q '"pictureMean"'; }
# The status lists them (one look).
listed() { status | grep -q "\"pictureConditions\":\[[^]]*\"$1\""; }
$o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
wait_for 120 "the recording's first frame" said "first frame taken"
wait_for 60 "a measure of the picture" measured
echo "before=$(status | grep -o '"picture[A-Za-z]*":[^,}]*' | tr '\n' ' ')"
# The status LED over two seconds: steady on, or blinking (both values seen).
echo "led-fine=$(led)"
episode() {
    # The pattern changes between these two readings: the
    # lower bound is read from the first, the upper from the second.
    e=$(now); v4l2-ctl -d "$sub" --set-ctrl "test_pattern=$2,show_information=2"; a=$(now)
    wait_closely 60 "$1 to be declared" has "$1"; b=$(now)
    echo "declared-$1=$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')"
    echo "declared-$1-early=$(awk -v a="$e" -v b="$b" 'BEGIN { print b - a }')"
    # What one look at the log costs here (the wait's own lag).
    has "$1"; c=$(now)
    echo "poll-$1=$(awk -v b="$b" -v c="$c" 'BEGIN { print c - b }')"
    echo "led-$1=$(led)"
    echo "listed-$1=$(listed "$1" && echo yes)"
    # The metrics file is written each second.
    shown() { [ "$(metric "obscura_picture_condition{condition=\"$1\"}")" = 1 ]; }
    wait_for 10 "the metrics to show $1" shown "$1"
    echo "metrics-$1=$(grep -E '^obscura_picture_condition(_episodes_total)?\{' /tmp/svc/obscura.prom | tr '\n' ' ')"
    $o status --socket /tmp/svc/control.sock | grep '^picture:' | sed "s/^/status-$1: /"
    v4l2-ctl -d "$sub" --set-ctrl test_pattern=0,show_information=0; a=$(now)
    wait_closely 60 "$1 to clear" lacks "$1"; b=$(now)
    echo "cleared-$1=$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')"
}
episode no_detail "$white"
episode dark "$black"
echo "state=$(status | grep -o '"state":"[a-z]*"')"
ask record stop | sed 's/^/ctl: /'
service_finished
echo "frame-times=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\n' ' ')"
service_marks "$f"
service_end "picture: "
