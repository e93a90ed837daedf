#!/bin/bash
# A scenario of LiveViewBoardTests (its test reads what this prints).
. board/virtual/waiting.sh
k=/tmp/pull; mkdir -p $k /root/.ssh /run/sshd
ssh-keygen -q -t ed25519 -N '' -f $k/hostkey
ssh-keygen -q -t ed25519 -N '' -C viewer@test -f $k/user
obscura keys add --view $k/user.pub | sed 's/^/keys: /'
/usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=$k/sshd.pid -h $k/hostkey -E $k/sshd.log
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $k/hostkey.pub)" > $k/known_hosts
sshd_up() { [ -s $k/sshd.pid ]; }; wait_for 60 "sshd to start" sshd_up
listening() { ss -ltnuH | awk '{print $1, $5}' | sort | tr '\n' ';'; }
before=$(listening)
frames() { ffprobe -v error -f h264 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
first_key() { ffprobe -v error -f h264 -show_entries frame=key_frame -of csv=p=0 "$1" | head -n 1 | cut -d, -f1; }
V=(--port 2222 -i "$k/user" --known-hosts "$k/known_hosts" obscura-view@127.0.0.1)
view() { obscura view "${V[@]}" --output $k/"$1".h264 --seconds "$2" 2> $k/"$1".err; }
# Idle: the service encodes for the viewer alone. Its start and
# end are waited for in the journal (a look at the status takes
# seconds on a loaded board: a short view could pass unseen).
said_n() { [ "$(journalctl -u obscura | grep -c "$1")" -ge "$2" ]; }
obscura view "${V[@]}" --output $k/idle.h264 2> $k/idle.err &
v=$!
wait_for 120 "the viewer to be counted" said_n "live view started" 1
some_bytes() { [ "$(stat -c %s $k/idle.h264 2>/dev/null || echo 0)" -gt 20000 ]; }
wait_for 120 "the viewer's first frames" some_bytes
during=$(listening)
kill $v; wait $v; sed 's/^/idle-err: /' $k/idle.err
wait_for 120 "the viewer to be gone" said_n "live view ended" 1
echo "idle-frames=$(frames $k/idle.h264) first-key=$(first_key $k/idle.h264)"
[ "$before" = "$during" ] && echo "listening: unchanged" || echo "listening: before $before during $during"
echo "idle-state=$(obscura status | grep '^state:')"
# Recording: the viewer gets the recording's own stream.
obscura ctl record start 2>&1 | sed 's/^/ctl: /'
view recording 5; echo "recording-rc=$?"; sed 's/^/recording-err: /' $k/recording.err
echo "recording-frames=$(frames $k/recording.h264) first-key=$(first_key $k/recording.h264)"
obscura ctl record stop > /dev/null
ended() { journalctl -u obscura | grep -q "recording finished"; }; wait_for 120 "the recording to finish" ended
for f in /var/lib/obscura/recordings/*.mp4; do
    echo "file-frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f")"
done
journalctl -u obscura -o cat | grep -E "live view|recording finished" | sed 's/^/journal: /'
# The view key gets nothing but the view.
S=(-p 2222 -i "$k/user" -o IdentitiesOnly=yes -o BatchMode=yes -o "UserKnownHostsFile=$k/known_hosts" obscura-view@127.0.0.1)
refused() { echo "refusal-$1: rc=$2 out=$(wc -c < $k/"$1".out) $(tr '\n' ' ' < $k/"$1".err | cut -c1-240)"; }
timeout 60 ssh -T "${S[@]}" cat /etc/passwd > $k/command.out 2> $k/command.err; refused command $?
timeout 60 ssh -T "${S[@]}" < /dev/null > $k/shell.out 2> $k/shell.err; refused shell $?
echo ls | timeout 60 sftp -b - -P 2222 -i $k/user -o IdentitiesOnly=yes -o UserKnownHostsFile=$k/known_hosts obscura-view@127.0.0.1 > $k/sftp.out 2> $k/sftp.err; refused sftp $?
timeout 60 ssh -N -o ExitOnForwardFailure=yes -R 127.0.0.1:2299:127.0.0.1:2222 "${S[@]}" > $k/remote.out 2> $k/remote.err; refused remote $?
timeout 60 ssh -W 127.0.0.1:2222 "${S[@]}" < /dev/null > $k/stdio.out 2> $k/stdio.err; refused stdio $?
journalctl -u obscura -o cat | grep -c "live view started" | sed 's/^/views-after-refusals: /'
