#!/bin/sh
# The board's side of BoardTests.twoCamerasEachRecordByTheirId: a second vimc
# camera beside the first; both listed; each recorded by its id, at the same
# time. Writes FOLDER/{first,second}.{mp4,out,err}; prints the listing and
# each recorder's exit status.
set -u
folder=$1
second=$(board/virtual/second-camera) || exit 1
.build/debug/obscura devices | grep '^camera '
.build/debug/obscura record --duration 3 --size 320x240 --camera "platform/vimc.0 Sensor B" \
    --output "$folder/first.mp4" > "$folder/first.out" 2> "$folder/first.err" &
first=$!
.build/debug/obscura record --duration 3 --size 320x240 --camera "$second" \
    --output "$folder/second.mp4" > "$folder/second.out" 2> "$folder/second.err"
echo "second status=$?"
wait "$first"
echo "first status=$?"
