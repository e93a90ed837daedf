#!/bin/sh
# The board's side of RecordingBoardTests.aFullDiskStopsTheRecordingCleanlyAndTheFilePlays: it prints what the test reads.
mkdir -p /mnt/small && mount -t tmpfs -o size=1m tmpfs /mnt/small
.build/debug/obscura record --camera synthetic --size 640x480 --duration 60 --min-free-space 0 --output /mnt/small/full.mp4
echo "status=$?"
ls /mnt/small
ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames -of default=nw=1 /mnt/small/full.mp4
