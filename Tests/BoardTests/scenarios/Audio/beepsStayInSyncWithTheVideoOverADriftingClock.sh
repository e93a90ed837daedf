#!/bin/sh
# The board's side of AudioBoardTests.beepsStayInSyncWithTheVideoOverADriftingClock: it prints what the test reads.
# Arguments: FOLDER (under the package root: where the files go, which the test reads)
o=.build/debug/obscura; d=$1
$o devices 2>&1 | grep '^audio' | sed 's/^/devices: /'
shift=$(amixer -c Loopback controls | grep "Rate Shift" | grep ",device=1$" | cut -d, -f1 | cut -d= -f2)
amixer -q -c Loopback cset numid="$shift" 100300 && echo "rate-shift=$(amixer -c Loopback cget numid="$shift" | sed -n 's/.*: values=//p')"
# The microphone's level through an audio data output: silence,
# beeps, silence. The beeps start once it listens (a starved
# board takes seconds to start a program).
. board/virtual/waiting.sh
$o listen --device hw:CARD=Loopback,DEV=1 --seconds 10 --interval 0.5 > "$d"/listen.txt 2>&1 &
listening() { grep -q " s  peak " "$d"/listen.txt; }; wait_for 60 "the first level heard" listening
$o beep --device hw:CARD=Loopback,DEV=0 --every 0.5 --count 3 --lead 0.3 > /dev/null 2>&1
wait; sed 's/^/listen: /' "$d"/listen.txt
# The beeps start once the recording has its first frame (its time
# zero), however long the camera took to open, and the recording
# is stopped (SIGINT: finalized) once the last beep has played.
$o record --duration 300 --size 636x480 --audio hw:CARD=Loopback,DEV=1 --output "$d"/sync.mp4 > "$d"/out.txt 2> "$d"/err.txt &
recorder=$!
started() { grep -q "file opened: time zero" "$d"/err.txt; }; wait_for 120 "the recording's first frame" started
$o beep --device hw:CARD=Loopback,DEV=0 --every 1 --count 40 --lead 0.5 > "$d"/beeps.txt 2> "$d"/beep.err
sleep 1  # (a second more: the last beep inside the recording)
kill -INT $recorder
wait $recorder; echo "record-rc=$?"
cat "$d"/out.txt; grep -E "time zero|audio" "$d"/err.txt; cat "$d"/beep.err
# No microphone at all: the recording is made without sound.
$o record --duration 2 --size 636x480 --audio hw:CARD=Nothing,DEV=9 --output "$d"/silent.mp4 > /dev/null 2> "$d"/none.txt
echo "no-audio-rc=$?"; grep "^obscura: audio" "$d"/none.txt
