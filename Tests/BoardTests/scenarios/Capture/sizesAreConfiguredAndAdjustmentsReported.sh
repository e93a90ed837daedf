#!/bin/sh
# The board's side of CaptureBoardTests.sizesAreConfiguredAndAdjustmentsReported: it prints what the test reads.
for size in 640x480 1280x720 1920x1080; do
    echo "== $size"; .build/debug/obscura stream --frames 3 --size $size --quiet 2>&1
done
