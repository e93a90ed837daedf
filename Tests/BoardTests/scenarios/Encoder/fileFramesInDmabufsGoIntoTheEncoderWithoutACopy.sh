#!/bin/sh
# The board's side of EncoderBoardTests.fileFramesInDmabufsGoIntoTheEncoderWithoutACopy: it prints what the test reads.
o=.build/debug/obscura
ffmpeg -v error -f lavfi -i testsrc2=size=640x480:rate=30 -frames:v 8 -pix_fmt nv12 -f rawvideo /tmp/f.nv12 || exit 1
allocators=""
for d in /dev/dma_heap/* /dev/udmabuf; do [ -e "$d" ] && allocators="$allocators$d "; done
echo "allocators: $allocators"
$o record --camera dmabuf-file:/tmp/f.nv12 --pixel-format NV12 --size 640x480 --encoder v4l2m2m --codec fwht \
    --duration 0.98 --output /tmp/d.fwht; echo "record-exit=$?"
OBSCURA=$o bench/record-vs-ffmpeg --encoder v4l2m2m --runs 1 --frames 32 --out /tmp; echo "bench-exit=$?"
