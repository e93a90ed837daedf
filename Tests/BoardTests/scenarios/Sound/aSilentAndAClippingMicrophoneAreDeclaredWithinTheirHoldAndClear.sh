#!/bin/bash
# The board's side of SoundBoardTests.aSilentAndAClippingMicrophoneAreDeclaredWithinTheirHoldAndClear: it prints what the test reads.
# Arguments: HOLD CLEAR
hold=$1 clear=$2
. Tests/BoardTests/scenarios/service.sh
service_fresh
# The virtual board's profile at 16 kHz: FFmpeg's AAC encoder,
# floating point emulated by TCG, at 48 kHz takes more than a
# slowed board has (board/profiles/virtual.toml). A Pi encodes
# 48 kHz at a few percent of a core.
sed 's/^sample_rate = 48000$/sample_rate = 16000/' board/profiles/virtual.toml > /tmp/svc/board.toml
grep -q '^sample_rate = 16000$' /tmp/svc/board.toml || echo "the virtual profile's sample_rate line has changed"
service_start /tmp/svc/board.toml <<T
$service_recording
[health]
hold_seconds = $hold
clear_seconds = $clear
# vimc's picture is SoundBoardTests' no part.
conditions = []
[audio]
# The loopback's capture end (the board's profile names no microphone).
device = "hw:CARD=Loopback,DEV=1"
bit_rate = 32000
T
now() { read -r t _ < /proc/uptime; echo "$t"; }
status() { ask status; }
has() { holds sound "$1"; }
lacks() { ! holds sound "$1"; }
listed() { status | grep -q "\"soundConditions\":\[[^]]*\"$1\""; }
shown() { [ "$(metric "obscura_sound_condition{condition=\"$1\"}")" = 1 ]; }
# Tone bursts of 0.2 s every 0.25 s on the loopback (LEVEL: dBFS), until stopped.
play() { $o beep --device hw:CARD=Loopback,DEV=0 --rate 16000 --every 0.25 --length 200 --count 2000 --lead 0 --level="$1" > /tmp/svc/beep 2>&1 & b=$!
         # Its first line, dated or not (a beep just as the stream starts may be undated), says it plays.
         heard() { grep -Eq "^beep [0-9]+ (at|undated)" /tmp/svc/beep; }; wait_for 60 "the tone to play" heard; }
quiet() { kill $b; wait $b 2>/dev/null; }
# When the tone stopped at the latest: T (a reading taken before
# the player was stopped), or the end of the last burst the player
# dated (its onsets on CLOCK_MONOTONIC, ns), when a starved player
# had stalled before.
stopped() { awk -v n="$1" '/^beep [0-9]+ at / { t = $4 } END { e = t / 1e9 + 0.2; print (t != "" && e < n) ? e : n }' /tmp/svc/beep; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; }
$o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
wait_for 120 "the recording's first frame" said "first frame taken"
play -9
wait_for 60 "the tone to be heard" lacks silent
echo "led-fine=$(led)"
# The silence begins between the end of the last burst the
# player dated (or now) and the player's end.
t=$(now); quiet; before=$(stopped "$t"); a=$(now); echo "stopped-silent=$(since "$before")"
wait_closely 60 "silence to be declared" has silent; echo "declared-silent=$(since "$a")"; echo "declared-silent-early=$(since "$before")"
has silent; echo "poll-silent=$(since "$a")"
echo "led-silent=$(led)"
echo "listed-silent=$(listed silent && echo yes)"
$o status --socket /tmp/svc/control.sock | grep '^sound:' | sed 's/^/status-silent: /'
wait_for 10 "the metrics to show silent" shown silent
echo "metrics-silent=$(grep -E '^obscura_sound_condition(_episodes_total)?\{' /tmp/svc/obscura.prom | tr '\n' ' ')"
# The clipped tone begins between these two readings: a lower
# bound is read from the first, an upper bound from the second.
before=$(now); play 6; a=$(now)
wait_closely 60 "silence to clear" lacks silent; echo "cleared-silent=$(since "$a")"
wait_closely 60 "clipping to be declared" has clipping; echo "declared-clipping=$(since "$a")"; echo "declared-clipping-early=$(since "$before")"
has clipping; echo "poll-clipping=$(since "$a")"
echo "listed-clipping=$(listed clipping && echo yes)"
$o status --socket /tmp/svc/control.sock | grep '^sound:' | sed 's/^/status-clipping: /'
wait_for 10 "the metrics to show clipping" shown clipping
echo "metrics-clipping=$(grep -E '^obscura_sound_condition(_episodes_total)?\{' /tmp/svc/obscura.prom | tr '\n' ' ')"
t=$(now); quiet; a=$(now); echo "stopped-clipping=$(since "$(stopped "$t")")"
wait_closely 60 "clipping to clear" lacks clipping; echo "cleared-clipping=$(since "$a")"
echo "state=$(status | grep -o '"state":"[a-z]*"')"
ask record stop | sed 's/^/ctl: /'
service_finished
echo "streams=$(ffprobe -v error -show_entries stream=codec_type,sample_rate -of csv=p=0 "$f" | tr '\n' ' ')"
service_marks "$f"
service_end "sound: "
