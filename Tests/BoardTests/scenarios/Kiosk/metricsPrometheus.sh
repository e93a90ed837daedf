#!/bin/bash
# A scenario of MetricsBoardTests (its test reads what this prints).
#
# The board's part (KioskBoard): Prometheus and node_exporter started,
# scraping the recording (stopped after it, by KioskBoard).
PATH=$PATH:$(pwd)/board/virtual; export PATH
echo "active=$(systemctl is-active obscura)"
echo "link=$(readlink /var/lib/prometheus/node-exporter/obscura.prom)"
echo "folder=$(stat -c %a:%U /run/obscura-metrics)"
cat > /etc/prometheus/prometheus.yml <<'YAML'
global:
  scrape_interval: 5s
  scrape_timeout: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['localhost:9100']
YAML
systemctl start prometheus-node-exporter prometheus
obscura ctl record start | sed 's/^/ctl: /'
query() { busybox wget -qO- "http://127.0.0.1:9090/api/v1/query?query=$1"; }
# The last sample scraped: a scrape that timed out on a busy board
# marks the series stale, and a plain instant query then has none.
last() { query "last_over_time($1%5B5m%5D)"; }
. board/virtual/waiting.sh
scraped() { last obscura_frames_total | grep -q '"value":\[[0-9.]*,"[1-9]'; }
# (Prometheus starts slowly under emulation, minutes on a starved
# board: a generous bound of board time, not of tries. Scrapes get
# 5 s: node_exporter's answer takes over a second there, and a
# 1 s scrape timed out every time.)
wait_for 480 "Prometheus to have scraped a frame count above 0" scraped
# The frame rate is reported once the first half second of frame
# times has gone into the file: on a starved board that is after
# the first frames are counted (until then it reads 0).
rated() { last obscura_recording_frames_per_second | grep -q '"value":\[[0-9.]*,"[0-9.]*[1-9]'; }
wait_for 240 "Prometheus to have scraped a frame rate above 0" rated
echo "file-mode=$(stat -c %a /run/obscura-metrics/obscura.prom)"
busybox wget -qO- http://127.0.0.1:9100/metrics | grep -E '^(node_textfile_scrape_error|obscura_state|obscura_frames_total|obscura_storage_free_bytes)' | sed 's/^/exporter: /'
echo "promql-frames=$(last obscura_frames_total)"
echo "promql-fps=$(last obscura_recording_frames_per_second)"
echo "promql-latency=$(last obscura_encoder_latency_seconds)"
echo "status-json=$(obscura status --json)"
obscura status | sed 's/^/status: /'
obscura ctl record stop | sed 's/^/ctl: /'
# The finished file's frame times: the camera's rate over the whole recording.
incoming_empty() { [ -z "$(ls /var/lib/obscura/incoming)" ]; }; wait_for 120 "nothing left in the incoming folder" incoming_empty
# shellcheck disable=SC2012  # (the newest of the service's own file names, which have no odd characters)
f=$(ls -t /var/lib/obscura/recordings/*.mp4 | head -n 1)
echo "file-pts=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\n' ' ')"
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
journalctl -u prometheus --no-pager -o cat | tail -n 5 | sed 's/^/prometheus: /'
