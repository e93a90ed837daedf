#!/bin/bash
# The board's side of BoardTests.chatteringPressesGiveOnePressEachAndSpikesNone: it prints what the test reads.
PATH=$PATH:$(pwd)/board/virtual; export PATH
.build/debug/obscura gpio button --chip obscura-sim --line photo-button --count 12 --timeout 3600 > b.out 2>&1 &
p=$!
. board/virtual/waiting.sh
button_ready() { grep -q ready b.out; }; wait_for 60 "the button to hold its line" button_ready
# Spikes, then presses and releases that bounce 0 to 5 times.
for _ in 1 2 3 4 5; do gpio-sim glitch photo-button; sleep 0.1; done  # (0.1 s apart: the pace of the stimulus)
for _ in $(seq 12); do
    gpio-sim chatter photo-button 1 $((RANDOM % 6)); sleep 0.1  # (each state held 0.1 s)
    gpio-sim chatter photo-button 0 $((RANDOM % 6)); sleep 0.1  # (each state held 0.1 s)
done
# Counted from the last release, not from the start: each chatter
# is processes started on the board (12 s a press on an emulated
# arm64 board beside a build), so the presses' own pace sets the
# wait, and a press lost ends it here, not at a timeout.
counted() { ! kill -0 "$p" 2> /dev/null; }
wait_for 30 "the button to count its 12 presses" counted || kill "$p"
wait "$p"; echo "status=$?"; cat b.out; rm -f b.out
