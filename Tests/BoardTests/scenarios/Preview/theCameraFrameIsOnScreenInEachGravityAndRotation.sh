#!/bin/sh
# The board's side of PreviewBoardTests.theCameraFrameIsOnScreenInEachGravityAndRotation:
# for each case, the preview's screen (vkms's writeback) and the camera's
# frame saved, for the test to compare.
# Arguments: FOLDER (under the package root), then GRAVITY ROTATION PLANE
# for each case (e.g. fit 0 overlay)
folder=$1; shift
while [ $# -ge 3 ]; do
    gravity=$1 rotation=$2 plane=$3; shift 3
    name=$gravity-$rotation
    if [ "$plane" = primary ]; then name=$name-primary; fi
    .build/debug/obscura preview --size 640x480 --duration 2 --gravity "$gravity" --rotation "$rotation" --plane "$plane" \
        --background 203040 --writeback "$folder/screen-$name.ppm" --save-frame "$folder/frame-$name.ppm" || exit 1
done
