#!/bin/sh
# The board's side of BoardTests.badCameraRequestsListWhatIsAvailable: it prints what the test reads.
.build/debug/obscura record --duration 1 --output x.mp4 --camera nope; echo "status=$?"
.build/debug/obscura record --duration 1 --output x.mp4 --size 8000x8000; echo "status=$?"
.build/debug/obscura record --duration 1 --output x.mp4 --pixel-format NV12; echo "status=$?"
