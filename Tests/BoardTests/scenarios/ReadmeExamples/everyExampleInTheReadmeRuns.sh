#!/bin/bash
# The board's side of ReadmeExamplesBoardTests.everyExampleInTheReadmeRuns:
# each example run in a fresh working folder, its exit code and last lines
# printed ("example N rc=…", "example N: …") for the test to read.
# Arguments: FOLDER (under the package root: key.txt and recipients.txt,
# which the examples name, and `examples`: a line each, "N<tab>WHEN<tab>
# COMMAND", WHEN being "alone", "button" (the record button pressed twice
# meanwhile) or "service" (`obscura run` up on the board's profile, its
# control socket where the examples look for it; these come last))
folder=$1
root=$(pwd)
. board/virtual/waiting.sh
service_root=$root
. Tests/BoardTests/scenarios/service.sh
# (Expanded by the examples: `$o` obscura, `$vimc` vimc's media device.)
o=$root/.build/debug/obscura
vimc=""
# shellcheck disable=SC2034  # (vimc is read by the examples eval runs)
for m in /dev/media*; do media-ctl -d "$m" -p 2>/dev/null | grep -q '"Sensor A"' && vimc=$m; done
w=$(mktemp -d); cd "$w" || exit 1; export HOME=$w
cp "$root/$folder/key.txt" "$root/$folder/recipients.txt" "$w"/
# The button pressed twice once the example holds its line.
press() {
    holding() { grep -q ready "$2"; }
    wait_for 60 "the example to hold its line" holding "$1" "$2"
    for _ in 1 2; do
        gpio-sim press "$1"; sleep 0.3; gpio-sim release "$1"; sleep 0.3  # (0.3 s down, 0.3 s up: the stimulus)
    done
}
service_up=0
while IFS=$'\t' read -r n when command <&3; do
    if [ "$when" = service ] && [ $service_up = 0 ]; then
        mkdir -p /run/obscura; rm -rf /tmp/svc; mkdir -p /tmp/svc
        service_start "$root/board/profiles/virtual.toml" /run/obscura/control.sock /run/obscura-live/live.sock <<'T'
[recording]
folder = "/tmp/svc/rec"
partial_folder = "/tmp/svc/incoming"
min_free_space_mb = 16
T
        o=$root/.build/debug/obscura
        service_up=1
    fi
    if [ "$when" = button ]; then press record-button "out.$n" & fi
    eval "$command" > "out.$n" 2>&1; echo "example $n rc=$?"; tail -n 3 "out.$n" | sed "s/^/example $n: /"
done 3< "$root/$folder/examples"
if [ $service_up = 1 ]; then kill "$p"; wait "$p"; fi
