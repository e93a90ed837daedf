#!/bin/bash
# A scenario of DoctorBoardTests (its test reads what this prints).
. board/virtual/waiting.sh
rec=/var/lib/obscura/recordings
doctor() { echo "== $1"; said=$(obscura doctor --json); rc=$?; echo "$said" | tr -d '\n'; echo; echo "exit $1 $rc"; }
mkdir -p /run/systemd/timesync && touch /run/systemd/timesync/synchronized
ready() { obscura status 2>/dev/null | grep -q '^state: idle'; }; wait_for 120 "the service to be idle" ready
obscura ctl record start > /dev/null
sleep 2  # (a recording of two seconds)
obscura ctl record stop > /dev/null
finished() { for f in "$rec"/*.mp4; do [ -e "$f" ] && return 0; done; return 1; }; wait_for 120 "a finished recording" finished
doctor healthy
rm -f /run/systemd/timesync/synchronized
doctor clock
touch /run/systemd/timesync/synchronized
mount --bind $rec $rec && mount -o remount,bind,ro $rec
doctor storage
umount $rec
echo vimc.0 > /sys/bus/platform/drivers/vimc/unbind
doctor camera
echo vimc.0 > /sys/bus/platform/drivers/vimc/bind
