#!/bin/bash
# shellcheck disable=SC2012  # (ls lists folders for the test to read; the names are the kiosk's own)
# A scenario of RetrievalBoardTests (its test reads what this prints).
#
# The board's part (KioskBoard): last of its scenarios, as it installs again with --allow-delete.
PATH=$PATH:$(pwd)/board/virtual; export PATH
k=/tmp/pull; mkdir -p $k
# What the service says, as it says it: a board that times out
# still shows how far the service got.
journalctl -u obscura -f -n all -o short-monotonic --no-pager | sed -u 's/^/journal: /' &
follower=$!
rec=/var/lib/obscura/recordings
press() { gpio-sim press "$1"; sleep 0.15; gpio-sim release "$1"; }  # (a press holds the button 0.15 s: the stimulus)
# Ceilings only: each wait ends at its event (a loaded board is slow).
. board/virtual/waiting.sh
finished_n() { [ "$(journalctl -u obscura | grep -c 'recording finished')" -ge "$1" ]; }
finished() { wait_for 120 "recording $1 to finish" finished_n "$1"; }
ssh-keygen -q -t ed25519 -N '' -f $k/hostkey
ssh-keygen -q -t ed25519 -N '' -C puller@test -f $k/user
obscura keys add $k/user.pub | sed 's/^/keys-add: /'
obscura keys list | sed 's/^/keys: /'
echo "keyfile: $(stat -c %a:%U "$(grep -h AuthorizedKeysFile /etc/ssh/sshd_config.d/obscura-fetch.conf | awk '{print $2}')")"
mkdir -p /run/sshd
/usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=$k/sshd.pid -h $k/hostkey -E $k/sshd.log
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $k/hostkey.pub)" > $k/known_hosts
S=(-P 2222 -i "$k/user" -o IdentitiesOnly=yes -o "UserKnownHostsFile=$k/known_hosts" -o BatchMode=yes)
pull() { obscura pull --port 2222 --identity $k/user --known-hosts $k/known_hosts "$@"; }
sshd_up() { [ -s $k/sshd.pid ]; }; wait_for 60 "sshd to start" sshd_up

# A finished recording, a photo, and a recording in progress.
mark() { echo "mark: $(cut -d' ' -f1 /proc/uptime) $*"; }
mark record; press record-button
sleep 4  # (a recording of four seconds)
mark stop; press record-button; finished 1
mark photo; press photo-button
photo_done() { ls /var/lib/obscura/photos/*.jpg.sha256 >/dev/null 2>&1; }; wait_for 120 "the photo" photo_done
mark record; press record-button
recording_open() { ls /var/lib/obscura/incoming/*.mp4.partial >/dev/null 2>&1; }; wait_for 120 "the recording file to open" recording_open
mark waited
ls /var/lib/obscura/incoming | sed 's/^/incoming: /'
printf 'ls -1a /\nls -1a /recordings\nls -1a /photos\n' | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 2>&1 | sed 's/^/view: /'
pull obscura-fetch@127.0.0.1 $k/dest > $k/out1 2> $k/err1; echo "pull1-rc=$?"
sed 's/^/pull1: /' $k/out1 $k/err1
ls -A $k/dest | sed 's/^/dest1: /'
(cd $k/dest && sha256sum -c ./*.sha256) 2>&1 | sed 's/^/verify1: /'
press record-button; finished 2
pull obscura-fetch@127.0.0.1 $k/dest > $k/out2 2> $k/err2; echo "pull2-rc=$?"
sed 's/^/pull2: /' $k/out2 $k/err2
for f in "$k"/dest/*.mp4; do
    echo "pulled-frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done

# An interrupted pull resumes without sending again what arrived.
head -c 6000000 /dev/urandom > $rec/big.mkv
(cd $rec && sha256sum big.mkv > big.mkv.sha256)
chown obscura:obscura $rec/big.mkv*; chmod 640 $rec/big.mkv*
obscura pull --port 2222 --identity $k/user --known-hosts $k/known_hosts --limit-kbps 4000 \
    obscura-fetch@127.0.0.1 $k/dest2 > /dev/null 2> $k/err3 &
pp=$!
part_arrived() { [ "$(stat -c %s $k/dest2/.obscura-pull/big.mkv.part 2>/dev/null || echo 0)" -gt 1000000 ]; }
wait_for 120 "a megabyte of the pull" part_arrived
kill -INT $pp; wait $pp
echo "interrupted-rc=$?"
part=$(stat -c %s $k/dest2/.obscura-pull/big.mkv.part)
ls -l $k/dest2/.obscura-pull | sed 's/^/parts: /'
# What the second run must fetch: all finished files less what arrived.
need=$(( $(cat $rec/*.mp4 $rec/*.mkv /var/lib/obscura/photos/*.jpg | wc -c) - $(cat $k/dest2/.obscura-pull/*.part | wc -c) ))
before=$(cat /sys/class/net/lo/statistics/tx_bytes)
pull obscura-fetch@127.0.0.1 $k/dest2 > $k/out4 2> $k/err4; echo "resume-rc=$?"
after=$(cat /sys/class/net/lo/statistics/tx_bytes)
echo "resume part=$part need=$need wire=$((after - before)) size=6000000 same=$(cmp -s $rec/big.mkv $k/dest2/big.mkv && echo yes || echo no)"
sed 's/^/resume: /' $k/err3 $k/out4 $k/err4

# What the account cannot do.
ssh -p 2222 -i $k/user -o IdentitiesOnly=yes -o UserKnownHostsFile=$k/known_hosts -o BatchMode=yes \
    obscura-fetch@127.0.0.1 'touch /tmp/shell-ran; id' < /dev/null > $k/shell.out 2>&1
echo "shell-rc=$? ran=$([ -e /tmp/shell-ran ] && echo yes || echo no) said-uid=$(grep -c uid= $k/shell.out)"
ssh -tt -p 2222 -i $k/user -o IdentitiesOnly=yes -o UserKnownHostsFile=$k/known_hosts -o BatchMode=yes \
    obscura-fetch@127.0.0.1 < /dev/null > $k/tty.out 2>&1
echo "tty: $(grep -c 'PTY allocation request failed' $k/tty.out)"
ssh -N -L 2223:127.0.0.1:2222 -p 2222 -i $k/user -o IdentitiesOnly=yes -o UserKnownHostsFile=$k/known_hosts \
    -o BatchMode=yes -o ExitOnForwardFailure=yes obscura-fetch@127.0.0.1 > $k/fwd.out 2>&1 &
fwd=$!
# Once ssh listens on 2223 (127.0.0.1:2223 in LISTEN, in the kernel's own
# table), or has ended.
forwarding() { grep -q ' 0100007F:08AF 00000000:0000 0A ' /proc/net/tcp || ! kill -0 "$fwd" 2>/dev/null; }
wait_for 60 "ssh to listen for the forward" forwarding
printf 'x' | timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2223 && cat <&3' > $k/fwd-got 2>&1
echo "forward-banner=$(grep -c SSH- $k/fwd-got)"; kill %1 2>/dev/null
echo data > $k/upload.txt
printf 'put %s /recordings/upload.txt\n' $k/upload.txt | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 > $k/up.out 2>&1
echo "upload-rc=$? exists=$(ls $rec/upload.txt 2>/dev/null | wc -l)"
printf 'get /etc/passwd %s/passwd\n' $k | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 > /dev/null 2>&1
echo "outside-rc=$? got=$(ls $k/passwd 2>/dev/null | wc -l)"
printf 'get /../incoming/* %s/\n' $k | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 > /dev/null 2>&1
echo "incoming-rc=$?"
printf 'rm /recordings/big.mkv\n' | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 > /dev/null 2>&1
echo "rm-readonly-rc=$? still=$(ls $rec/big.mkv | wc -l)"

# Deleting after verification, once installed with --allow-delete.
deploy/install --binary .build/debug/obscura --board virtual --allow-delete > $k/install.out 2>&1
echo "install-rc=$? mode=$(stat -c %a $rec) mount=$(findmnt -n -o OPTIONS /srv/obscura/recordings | cut -d, -f1)"
sed 's/^/install: /' $k/install.out
kill -HUP "$(cat $k/sshd.pid)"
sleep 1  # (sshd takes its new configuration on SIGHUP and says nothing when it has)
answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
head -c 1000 /dev/urandom > $rec/bogus.mkv
echo "0000000000000000000000000000000000000000000000000000000000000000  bogus.mkv" > $rec/bogus.mkv.sha256
chown obscura:obscura $rec/bogus.mkv*; chmod 640 $rec/bogus.mkv*
pull --delete obscura-fetch@127.0.0.1 $k/dest > $k/out5 2> $k/err5; echo "delete-rc=$?"
sed 's/^/delete: /' $k/out5 $k/err5
ls -A $rec /var/lib/obscura/photos | sed 's/^/left: /'
printf 'put %s /recordings/upload.txt\n' $k/upload.txt | sftp -b - "${S[@]}" obscura-fetch@127.0.0.1 > /dev/null 2>&1
echo "upload-delete-mode-rc=$? bytes=$(stat -c %s $rec/upload.txt 2>/dev/null || echo none)"
grep -E "Accepted|refused|not allowed|Connection closed" $k/sshd.log | sed 's/^/sshd: /' | head -20
sleep 1  # (the journal's last lines a second to come through the follower)
kill "$follower" 2>/dev/null
