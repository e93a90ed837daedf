#!/bin/sh
# The board's side of PreviewBoardTests.withoutADisplayTheRecordingGoesOnHeadless: it prints what the test reads.
.build/debug/obscura record --preview --duration 2 --size 640x480 --output /tmp/h.mp4 || echo "record failed"
ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of default=nw=1 /tmp/h.mp4
