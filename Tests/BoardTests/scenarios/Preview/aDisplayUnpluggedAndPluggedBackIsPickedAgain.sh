#!/bin/sh
# The board's side of PreviewBoardTests.aDisplayUnpluggedAndPluggedBackIsPickedAgain: it prints what the test reads.
.build/debug/obscura preview --size 640x480 --duration 200 > /tmp/p.out 2>&1 &
p=$!
. board/virtual/waiting.sh
# Each step waits for the preview to say the last one happened.
said() { [ "$(grep -c "$1" /tmp/p.out)" -ge "$2" ]; }
wait_for 60 "the preview on" said "preview on" 1
echo off > /sys/class/drm/card0-Virtual-1/status; echo change > /sys/class/drm/card0/uevent
wait_for 60 "the preview to see no display" said "no connected display" 1
echo on > /sys/class/drm/card0-Virtual-1/status; echo change > /sys/class/drm/card0/uevent
wait_for 60 "the preview on again" said "preview on" 2
kill -INT "$p"; wait "$p"
cat /tmp/p.out
