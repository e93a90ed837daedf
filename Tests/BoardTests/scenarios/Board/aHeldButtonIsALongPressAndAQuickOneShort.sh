#!/bin/sh
# The board's side of BoardTests.aHeldButtonIsALongPressAndAQuickOneShort: it prints what the test reads.
PATH=$PATH:$(pwd)/board/virtual; export PATH
.build/debug/obscura gpio button --chip obscura-sim --line record-button --count 2 --long-press 3000 --timeout 120 > b.out 2>&1 &
p=$!
. board/virtual/waiting.sh
button_ready() { grep -q ready b.out; }; wait_for 60 "the button to hold its line" button_ready
gpio-sim press record-button
sleep 5  # (held five seconds: the long press is the stimulus)
gpio-sim release record-button
sleep 0.5  # (released half a second: the gap between the two presses)
# The quick one by the shell's own writes (a gpio-sim per edge
# took seconds on a starved board).
pull=$(dirname "$(gpio-sim value-file record-button)")/pull
echo pull-up > "$pull"
sleep 0.1  # (a quick press of 0.1 s)
echo pull-down > "$pull"
wait "$p"; echo "status=$?"; cat b.out; rm -f b.out
