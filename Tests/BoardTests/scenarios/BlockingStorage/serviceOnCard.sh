# shellcheck shell=sh
# The service (`obscura run`, the virtual board's profile) with its
# recordings on a card made by board/virtual/dm-card at /mnt/card, photos,
# control socket and metrics in /tmp/svc (sourced by BlockingStorage's
# scenarios; Tests/BoardTests/scenarios/service.sh says what it gives: `$o`,
# `$p`, `said`). Ready when this returns.
PATH=$PATH:$(pwd)/board/virtual; export PATH
. board/virtual/waiting.sh
. Tests/BoardTests/scenarios/service.sh
dm-card make obscura-card /mnt/card || exit 1
rm -rf /tmp/svc; mkdir -p /tmp/svc
service_start virtual <<'T'
[recording]
folder = "/mnt/card/rec"
partial_folder = "/mnt/card/incoming"
size = "160x120"
segment_seconds = 0
fragment_seconds = 0.5
min_free_space_mb = 16
T
