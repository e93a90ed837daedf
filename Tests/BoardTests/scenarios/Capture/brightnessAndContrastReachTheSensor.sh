#!/bin/sh
# The board's side of CaptureBoardTests.brightnessAndContrastReachTheSensor: it prints what the test reads.
.build/debug/obscura stream --frames 3 --preset vga640x480 --metadata --stats --set Brightness=0.8 Contrast=1.5
.build/debug/obscura stream --frames 3 --preset vga640x480 --stats --set Brightness=-0.8
