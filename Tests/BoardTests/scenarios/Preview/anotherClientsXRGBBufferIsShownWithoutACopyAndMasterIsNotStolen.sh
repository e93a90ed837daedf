#!/bin/sh
# The board's side of PreviewBoardTests.anotherClientsXRGBBufferIsShownWithoutACopyAndMasterIsNotStolen: it prints what the test reads.
# Arguments: FOLDER
folder=$1
.build/debug/obscura preview --pattern --pattern-size 320x240 --destination 320x240+100+50 --background 203040 \
    --duration 12 --writeback "$folder"/pattern.ppm > "$folder"/pattern.out 2>&1 &
p=$!
# Once the pattern is on the display, the display is taken: a
# recording with a preview goes on headless.
. board/virtual/waiting.sh
showing() { grep -q "preview on" "$folder/pattern.out"; }
wait_for 60 "the pattern on the display" showing
.build/debug/obscura record --preview --duration 2 --size 640x480 --output /tmp/m.mp4 || echo "record failed"
ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of default=nw=1 /tmp/m.mp4
echo "pts=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 /tmp/m.mp4 | sort -n | tr '\n' ' ')"
wait $p
cat "$folder"/pattern.out
