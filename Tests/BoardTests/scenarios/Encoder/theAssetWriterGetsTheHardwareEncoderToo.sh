#!/bin/sh
# The board's side of EncoderBoardTests.theAssetWriterGetsTheHardwareEncoderToo: it prints what the test reads.
o=.build/debug/obscura
$o record --through asset-writer --encoder v4l2m2m --codec fwht --size 648x480 --duration 3 --output /tmp/w.fwht || exit 1
$o decode --input /tmp/w.fwht --size 648x480 --pixel-format BG24 --output /tmp/w.rgb || exit 1
