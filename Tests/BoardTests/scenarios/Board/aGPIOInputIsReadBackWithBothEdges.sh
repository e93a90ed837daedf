#!/bin/sh
# The board's side of BoardTests.aGPIOInputIsReadBackWithBothEdges: it prints what the test reads.
.build/debug/obscura gpio watch --chip obscura-sim --line record-button --count 2 --timeout 60 > watch.out 2>&1 &
watcher=$!
. board/virtual/waiting.sh
watching() { grep -q ready watch.out; }; wait_for 60 "the watcher to hold the line" watching
gpio-sim press record-button
sleep 0.3  # (the press lasts 0.3 s: the stimulus, which the edges' kernel times must show)
gpio-sim release record-button
wait "$watcher"; status=$?
cat watch.out; rm -f watch.out; exit $status
