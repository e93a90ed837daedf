#!/bin/sh
# The board's side of BoardTests.theShimDebouncesInTheKernelWithLibgpiodV2: it prints what the test reads.
# Arguments: CHECK
check=$1
PATH=$PATH:$(pwd)/board/virtual; export PATH
"$check" obscura-sim flash-button flash-led 150 10 > c.out 2>&1 &
p=$!
. board/virtual/waiting.sh
shim_ready() { grep -q ready c.out; }; wait_for 60 "the shim to hold its lines" shim_ready
echo "led=$(gpio-sim get flash-led)"
# Three spikes, then ten presses and releases that bounce three times.
for _ in 1 2 3; do gpio-sim glitch flash-button; sleep 0.1; done  # (0.1 s apart: the pace of the stimulus)
for _ in $(seq 10); do
    gpio-sim chatter flash-button 1 3; sleep 0.1  # (each state held 0.1 s)
    gpio-sim chatter flash-button 0 3; sleep 0.1  # (each state held 0.1 s)
done
wait "$p"; echo "status=$?"; cat c.out; rm -f c.out
