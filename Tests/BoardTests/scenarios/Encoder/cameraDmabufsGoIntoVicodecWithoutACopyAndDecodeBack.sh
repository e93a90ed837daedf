#!/bin/sh
# The board's side of EncoderBoardTests.cameraDmabufsGoIntoVicodecWithoutACopyAndDecodeBack:
# it prints what the test reads.
# Arguments: FOLDER (under the package root: the test reads the frames
# there) API (single-planar, or multi-planar: vicodec loaded again with
# multiplanar=1)
folder=$1 api=$2
if [ "$api" = multi-planar ]; then
    if ! { rmmod vicodec && insmod "$OBSCURA_BOARD_CACHE/modules/vicodec.ko" multiplanar=1; }; then
        echo "reload failed"; exit 1
    fi
    sleep 1  # (as the driver was loaded at boot: a second for its devices to settle)
fi
o=.build/debug/obscura
$o record --encoder v4l2m2m --codec fwht --size 648x480 --duration 3 --output /tmp/v.fwht \
    --save-frame "$folder/$api/reference.ppm" || exit 1
$o decode --input /tmp/v.fwht --size 648x480 --pixel-format BG24 --output "$folder/$api/decoded.rgb" || exit 1
# A size the driver adjusts is refused by name, and nothing is left behind.
$o record --encoder v4l2m2m --codec fwht --size 636x480 --duration 1 --output /tmp/bad.fwht; echo "bad-exit=$?"
for f in /tmp/bad.fwht /tmp/bad.fwht.partial; do if [ -e "$f" ]; then echo "leftover: $f"; fi; done
