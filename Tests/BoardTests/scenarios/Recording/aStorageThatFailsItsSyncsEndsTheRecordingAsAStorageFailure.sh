#!/bin/sh
# The board's side of RecordingBoardTests.aStorageThatFailsItsSyncsEndsTheRecordingAsAStorageFailure: it prints what the test reads.
PATH=$PATH:$(pwd)/board/virtual; export PATH
. board/virtual/waiting.sh
dm-card make obscura-card /mnt/card 128 || exit 1
.build/debug/obscura record --camera synthetic --size 640x480 --duration 120 --fragment 0.5 --output /mnt/card/rec.mp4 > /tmp/rec.out 2>&1 &
pid=$!
grown() { [ "$(stat -c %s /mnt/card/rec.mp4.partial 2>/dev/null || echo 0)" -gt 200000 ]; }
wait_for 120 "the recording to have fragments on the card" grown
read -r cut _ < /proc/uptime
dm-card error obscura-card && echo "card=dead"
ended() { ! kill -0 "$pid" 2>/dev/null; }
wait_for 120 "the recording to end" ended
read -r end _ < /proc/uptime
wait "$pid"; echo "status=$?"
echo "after=$(awk -v a="$cut" -v b="$end" 'BEGIN { printf "%.2f", b - a }')"
tail -n 3 /tmp/rec.out | sed 's/^/out: /'
