#!/bin/sh
# The board's side of OverlayBoardTests.thePreviewShowsTheCaptionOnlyWhenAsked: it prints what the test reads.
# Arguments: FOLDER
folder=$1
.build/debug/obscura preview --size 640x480 --duration 3 --gravity stretch --overlay --overlay-text "Gate 3" \
    --writeback "$folder"/caption.ppm > "$folder"/caption.out 2>&1; echo "caption-rc=$?"
.build/debug/obscura preview --size 640x480 --duration 3 --gravity stretch --writeback "$folder"/plain.ppm > /dev/null 2>&1; echo "plain-rc=$?"
