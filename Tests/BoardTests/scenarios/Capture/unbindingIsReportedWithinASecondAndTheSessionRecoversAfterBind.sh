#!/bin/sh
# The board's side of CaptureBoardTests.unbindingIsReportedWithinASecondAndTheSessionRecoversAfterBind: it prints what the test reads.
.build/debug/obscura stream --duration 14 --preset vga640x480 > s.out 2>&1 &
p=$!
. board/virtual/waiting.sh
running() { grep -q didStartRunning s.out; }; wait_for 60 "the stream to start running" running
sleep 2  # (the stream runs two seconds before the camera goes: the stimulus)
echo "unbind uptime=$(cut -d' ' -f1 /proc/uptime)"
echo vimc.0 > /sys/bus/platform/drivers/vimc/unbind
echo "unbound uptime=$(cut -d' ' -f1 /proc/uptime)"
sleep 3  # (the camera stays away three seconds: the stimulus)
echo "bind uptime=$(cut -d' ' -f1 /proc/uptime)"
echo vimc.0 > /sys/bus/platform/drivers/vimc/bind
wait "$p"; status=$?
cat s.out; rm -f s.out; exit "$status"
