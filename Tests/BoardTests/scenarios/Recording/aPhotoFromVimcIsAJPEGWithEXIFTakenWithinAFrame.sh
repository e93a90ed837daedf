#!/bin/sh
# The board's side of RecordingBoardTests.aPhotoFromVimcIsAJPEGWithEXIFTakenWithinAFrame: it prints what the test reads.
.build/debug/obscura stream --size 640x480 --frames 12 | grep '^frame ' | sed 's/^/measure /'
.build/debug/obscura photo --size 640x480 --thumbnail 160x120 --output v.jpg || exit 1
exiftool -s -s -s -Make -Model -ImageSize -ThumbnailLength v.jpg
echo "validate: $(exiftool -validate -warning -a -s -s -s v.jpg | tr '\n' ' ')"
djpeg v.jpg | head -c 15 | head -2 | tr '\n' ' '; echo
rm -f v.jpg
# vimc has no raw stream through libcamera: RAW is refused by name, nothing written.
.build/debug/obscura photo --size 640x480 --raw --output r.jpg; echo "raw-exit=$?"
for f in r.jpg r.dng; do if [ -e "$f" ]; then echo "leftover: $f"; fi; done
