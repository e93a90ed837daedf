#!/bin/sh
# The board's side of RecordingBoardTests.aBayerFrameFromVimcBecomesADNGThatLibrawAndExiftoolRead: it prints what the test reads.
for m in /dev/media*; do media-ctl -d "$m" -p 2>/dev/null | grep -q '"Sensor A"' && dev=$m; done
media-ctl -d "$dev" -V '"Sensor A":0[fmt:SGRBG8_1X8/640x480]' || exit 1
media-ctl -d "$dev" -l '"Sensor A":0->"Raw Capture 0":0[1]' 2>/dev/null
.build/debug/obscura dng --node "Raw Capture 0" --pattern GRBG --size 640x480 --output v.dng || exit 1
raw-identify -v v.dng | grep -E "^(Camera|Full size|Filter pattern)"
exiftool -s -s -s -SubIFD:BitsPerSample -CFAPattern -SubIFD:WhiteLevel v.dng
echo "validate: $(exiftool -validate -warning -a -s -s -s v.dng | tr '\n' ' ')"
dcraw_emu -w -Z v.ppm v.dng && head -c 15 v.ppm | tr '\n' ' '; echo
rm -f v.dng v.ppm
