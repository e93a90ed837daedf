#!/bin/bash
# A disk that fills up under a command (DiskFullTests; run in a mount
# namespace of its own, under unshare):
#
#   fill-disk.sh LEAVE AFTER [--once-filled] COMMAND [ARGUMENT...]
#
# A 4 MiB tmpfs; COMMAND run in the background, each "{m}" in its arguments
# the tmpfs's path; once AFTER bytes are written there the filesystem is
# filled, leaving LEAVE bytes (with --once-filled, COMMAND starts only
# then). Then it prints the command's exit code ("rc=N"), its output
# ("said: …"), what is left ("left: NAME") and, for each movie file, its
# frames as ffprobe decodes them ("file: NAME frames=N"; "decode-error:
# NAME: …" for anything ffprobe says) and its checksum ("checksum: NAME: OK",
# or "checksum: NAME: none").
set -u
leave=$1 after=$2; shift 2
once_filled=0
if [ "${1:-}" = --once-filled ]; then once_filled=1; shift; fi
m=$(mktemp -d /tmp/obscura-full.XXXXXX)
mount -t tmpfs -o size=4m tmpfs "$m" || { echo "mount failed"; exit 97; }
command=("${@//\{m\}/$m}")
run() {
    if [ $once_filled = 1 ]; then
        until [ -e "$m.filled" ]; do sleep 0.05; done  # (a look every 50 ms: the filler is this script, a moment away)
    fi
    "${command[@]}"
}
run > "$m.log" 2>&1 &
p=$!
for _ in $(seq 600); do
    [ "$(du -sb "$m" | cut -f1)" -ge "$after" ] && break
    sleep 0.05  # (a look every 50 ms at what the command has written, for 30 s at most)
done
free=$(stat -f -c '%a*%S' "$m")
head -c $(( free - leave > 0 ? free - leave : 0 )) /dev/zero > "$m/filler" 2>/dev/null
touch "$m.filled"
wait "$p"; echo "rc=$?"
sed 's/^/said: /' "$m.log"
for f in "$m"/*; do
    name=${f##*/}
    [ -e "$f" ] && [ "$name" != filler ] && echo "left: $name"
done
for f in "$m"/*.mp4 "$m"/*.mov "$m"/*.mkv; do
    [ -e "$f" ] || continue
    name=${f##*/}
    # ffprobe decodes every frame to count them: anything it says is an error.
    echo "file: $name frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f" 2>"$m.err")"
    head -5 "$m.err" | sed "s|^|decode-error: $name: |"
    if [ -e "$f.sha256" ]; then (cd "$m" && sha256sum -c "$name.sha256" 2>&1) | sed 's/^/checksum: /'; else echo "checksum: $name: none"; fi
done
umount "$m"; rm -rf "$m" "$m.log" "$m.filled" "$m.err"
