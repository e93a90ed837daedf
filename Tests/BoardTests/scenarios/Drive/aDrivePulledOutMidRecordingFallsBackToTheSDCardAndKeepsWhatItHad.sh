#!/bin/sh
# The board's side of DriveBoardTests.aDrivePulledOutMidRecordingFallsBackToTheSDCardAndKeepsWhatItHad: it prints what the test reads.
# Arguments: LEAST
least=$1
drive=/media/obscura/obscura/recordings
sd=/var/lib/obscura/recordings
frames() { n=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null); echo "${n:-0}"; }
. board/virtual/waiting.sh
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# The drive, prepared once (README) and mounted by the system.
mkdir -p /media/obscura && mount LABEL=OBSCURA /media/obscura
mkdir -p $drive /media/obscura/.obscura-incoming && chown obscura:obscura $drive /media/obscura/obscura /media/obscura/.obscura-incoming
sed -i '/^\[usb\]/,/^\[/ { s/^drive = .*/drive = "LABEL=OBSCURA"/; s/^quota_mb = .*/quota_mb = 200/; s/^min_free_space_mb = .*/min_free_space_mb = 32/ }' /etc/obscura/obscura.toml
sed -n '/^\[usb\]/,$ p' /etc/obscura/obscura.toml | grep -v '^#' | sed 's/^/config: /'
sed -i 's/^#* *segment_seconds = .*/segment_seconds = 2/' /etc/obscura/obscura.toml
systemctl restart obscura
drive_seen() { obscura status | grep -q '^storage usb: /media'; }
wait_for 120 "the service to see the drive" drive_seen
obscura status | grep '^storage' | sed 's/^/before: /'
obscura ctl record start | sed 's/^/start: /'
# count FILES...: how many of them are there (a glob that matched nothing: 0).
count() { n=0; for f in "$@"; do [ -e "$f" ] && n=$((n + 1)); done; echo "$n"; }
two_on_drive() { [ "$(count "$drive"/*.sha256)" -ge 2 ]; }
wait_for 120 "two finished segments on the drive" two_on_drive
(cd $drive && sha256sum -c ./*.sha256 | sed 's/^/on-drive: /')
# shellcheck disable=SC2012  # (a listing for the test to read)
ls /srv/obscura/media/obscura/obscura/recordings | sed 's/^/fetch-view: /'
echo "unplug uptime=$(uptime_s)"
board/virtual/unplug
echo "gone uptime=$(uptime_s)"
# What happened, not a frame count: the journal's line, then a few
# of the camera's frames in the SD card's files.
failed_over() { journalctl -u obscura | grep -q "recording goes on on the SD card"; }
wait_for 60 "the journal to say the recording goes on on the SD card" failed_over
# (The service's count: an ffprobe per try would take seconds
# each on a slow board. The files are read back below.)
on_sd() { obscura status > /tmp/on-sd; grep -q "^file: $sd/" /tmp/on-sd     && [ "$(sed -n 's/^frames: \([0-9]*\) .*/\1/p' /tmp/on-sd)" -ge "$least" ] 2>/dev/null; }
wait_for 120 "$least frames recorded on the SD card" on_sd
echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
obscura ctl record stop > /dev/null
sd_finished() { [ "$(count "$sd"/*.sha256)" -ge 1 ] && [ -z "$(ls /var/lib/obscura/incoming)" ]; }
wait_for 120 "the SD card's recording finished" sd_finished
obscura status | sed 's/^/status: /'
grep -E '^obscura_(storage_present|storage_active|stage_restarts_total)' /run/obscura-metrics/obscura.prom | sed 's/^/metric: /'
journalctl -u obscura --no-pager -o short-monotonic | grep -E "recording goes on on the SD card" | sed 's/^/mono: /'
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | grep -v "^obscura: encoder" | sed 's/^/journal: /'
# Every SD file's checksum; frames read back (an ffprobe each, seconds
# on a slow board, where 2 s segments hold few frames) until a few
# are seen.
(cd $sd && sha256sum -c ./*.sha256 | sed 's/^/sum: /')
total=0
for f in "$sd"/*.mp4; do
    [ $total -ge "$least" ] && break
    n=$(frames "$f"); total=$((total + n)); echo "sd-file=$(basename "$f") frames=$n"
done
echo "sd-files=$(count "$sd"/*.mp4)"
