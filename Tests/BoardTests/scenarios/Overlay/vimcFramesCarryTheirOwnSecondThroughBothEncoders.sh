#!/bin/sh
# The board's side of OverlayBoardTests.vimcFramesCarryTheirOwnSecondThroughBothEncoders: it prints what the test reads.
# Arguments: OUT
out=$1
.build/debug/obscura record --size 640x480 --duration 4 --overlay --overlay-text "Gate 3" \
    --output "$out"/sw.mp4 > "$out"/sw.out 2> "$out"/sw.log; echo "sw-rc=$?"
.build/debug/obscura record --size 648x480 --codec fwht --encoder v4l2m2m --duration 4 --overlay --overlay-text "Gate 3" \
    --timestamps "$out"/hw.txt --output "$out"/hw.fwht > "$out"/hw.out 2> "$out"/hw.log; echo "hw-rc=$?"
.build/debug/obscura decode --input "$out"/hw.fwht --codec fwht --size 648x480 --pixel-format BG24 --output "$out"/hw.rgb \
    > /dev/null 2> "$out"/decode.log; echo "decode-rc=$?"
tail -n 3 "$out"/sw.log "$out"/sw.out "$out"/hw.log "$out"/hw.out "$out"/decode.log
