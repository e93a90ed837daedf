#!/bin/bash
# A scenario of StageBoardTests (its test reads what this prints): the
# vicodec encoder's driver unbound mid-recording and bound again.
# Arguments: LEAST (the frames that prove the path ran; no rate is assumed)
least=$1
. board/virtual/waiting.sh
. Tests/BoardTests/scenarios/Kiosk/stage.sh
rec=/var/lib/obscura/recordings
frames() { obscura status --json | sed -n 's/.*"frames":\([0-9]*\).*/\1/p'; }
sed -i '/^\[recording\]/,/^\[/ s/^codec = .*/codec = "fwht"/' /etc/obscura/obscura.toml
# vimc's scaler makes 640 wide 636; vicodec takes widths in steps of 8.
sed -i 's/^# size = .*/size = "648x480"/' /etc/obscura/obscura.toml
grep -E '^(codec|size)' /etc/obscura/obscura.toml | sed 's/^/config: /'
systemctl restart obscura
obscura ctl record start 2>&1 | sed "s/^/ctl: /"
some() { [ "$(frames)" -ge "$least" ] 2>/dev/null; }
wait_for 120 "$least frames recorded" some
pdev=$(basename /sys/bus/platform/drivers/vicodec/vicodec*)
still_files() { n=0; for f in "$rec"/*.fwht; do [ -e "$f" ] && n=$((n + 1)); done; echo "still-files=$n"; }
taken_away_and_back vicodec "$pdev" frames "$least" still_files
# What happened first, then the slow part (decoding every frame
# through vicodec): a bound reached while decoding keeps the rest.
(cd "$rec" && sha256sum -c ./*.sha256 | sed 's/^/sum: /')
obscura status | sed 's/^/status: /'
# The metrics file is written every few seconds: once it counts the restart.
restart_counted() { grep -q '^obscura_stage_restarts_total{stage="encoder"} [1-9]' /run/obscura-metrics/obscura.prom; }
wait_for 60 "the metrics to count the encoder's restart" restart_counted
grep -E '^obscura_(stage_restarts_total|stage_gap_seconds_total|recordings_failed_total)' /run/obscura-metrics/obscura.prom | sed 's/^/metric: /'
journalctl -u obscura --no-pager -o short-monotonic | grep -E "recording goes on after|encoder back after|recording finished" | sed 's/^/mono: /'
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
for f in "$rec"/*.fwht; do
    echo "file=$(basename "$f") $(obscura decode --input "$f" --size 648x480 --pixel-format BG24 --output /dev/null 2>&1 | grep '^decoded')"
done
