#!/bin/sh
# The board's side of RecordingBoardTests.preRecordingFromVimcBeginsBeforeTheTrigger: it prints what the test reads.
.build/debug/obscura record --size 640x480 --pre-record 2 --trigger-after 3.5 --duration 1 --output pre.mp4 || exit 1
echo "--packets"
ffprobe -v error -select_streams v:0 -show_entries packet=flags,pts_time -of csv=p=0 pre.mp4; rm -f pre.mp4 pre.mp4.sha256
