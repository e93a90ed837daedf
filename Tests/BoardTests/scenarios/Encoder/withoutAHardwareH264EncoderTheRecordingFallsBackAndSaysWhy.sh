#!/bin/sh
# The board's side of EncoderBoardTests.withoutAHardwareH264EncoderTheRecordingFallsBackAndSaysWhy: it prints what the test reads.
.build/debug/obscura record --encoder auto --codec h264 --size 640x480 --duration 1 --output /tmp/f.mp4 || exit 1
ffprobe -v error -show_entries stream=codec_name -of default=nw=1 /tmp/f.mp4
