#!/bin/bash
# A scenario of EvidenceBoardTests (its test reads what this prints): the
# service encrypting, segments, a photo, a kill; then the pull with the
# identity.
# Arguments: FOLDER (the key pair's, which the test machine reads too)
#            RECIPIENT [WHY] (WHY: the key pair could not be made)
[ -z "${3:-}" ] || { echo "$3"; exit 1; }
PATH=$PATH:$(pwd)/board/virtual; export PATH
out=$1 recipient=$2; k=/tmp/pull; mkdir -p $k
rec=/var/lib/obscura/recordings; photos=/var/lib/obscura/photos; inc=/var/lib/obscura/incoming
frames() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1" 2>/dev/null; }
sed -i "s/^recipients = \\[\\]/recipients = [\"$recipient\"]/" /etc/obscura/obscura.toml
sed -i 's/^#* *segment_seconds = .*/segment_seconds = 2/' /etc/obscura/obscura.toml
# (640x480, not the board's 320x240: the caption is read back
# glyph by glyph, a 24th of the frame's height.)
sed -i '/^\[recording\]/,/^\[/ { s/^#* *size = .*/size = "640x480"/ }' /etc/obscura/obscura.toml
sed -i '/^\[overlay\]/,/^\[/ { s/^enabled = .*/enabled = true/; s/^text = .*/text = "Evidence"/ }' /etc/obscura/obscura.toml
sed -n '/^\[encryption\]/,$ p' /etc/obscura/obscura.toml | grep -v '^#' | sed 's/^/config: /'
systemctl restart obscura
. board/virtual/waiting.sh
answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
# Segments, a photo, then a kill mid-recording: systemd restarts
# the service, which keeps the interrupted file. (Stopped once two
# segments are sealed: every file costs the pull time on a slow
# board, and 2 s segments pile up while a photo is awaited.)
obscura ctl record start | sed 's/^/start: /'
two_sealed() { n=0; for f in "$rec"/*.mp4.age.sha256; do [ -e "$f" ] && n=$((n + 1)); done; [ "$n" -ge 2 ]; }; wait_for 180 "two finished encrypted segments" two_sealed
obscura ctl record stop > /dev/null
obscura ctl photo | sed 's/^/photo: /'
photo_sealed() { ls $photos/*.jpg.age.sha256 > /dev/null 2>&1; }; wait_for 120 "the encrypted photo" photo_sealed
incoming_empty() { [ -z "$(ls $inc)" ]; }; wait_for 120 "nothing left in the incoming folder" incoming_empty
# One file, its fragments aligned to age's chunks, killed once it
# holds a few seconds of sealed chunks.
sed -i 's/^segment_seconds = .*/segment_seconds = 0/; s/^align_to_chunks = .*/align_to_chunks = true/' /etc/obscura/obscura.toml
grep '^align_to_chunks' /etc/obscura/obscura.toml | sed 's/^/config: /'
systemctl restart obscura
answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
obscura ctl record start 2>&1 | sed "s/^/ctl: /"
sealed_enough() { size=0; for p in "$inc"/*.partial; do [ -e "$p" ] && size=$(stat -c %s "$p"); done; [ "$size" -ge 300000 ]; }
wait_for 180 "300000 bytes in the encrypted recording" sealed_enough
echo "killed-at=$size"
systemctl kill -s KILL obscura
restarted() { [ "$(systemctl show -p NRestarts --value obscura)" -ge 1 ] && [ "$(systemctl is-active obscura)" = active ]; }
wait_for 120 "systemd to restart the service" restarted
recovered() { journalctl -u obscura | grep -q "recovered an interrupted encrypted recording"; }; wait_for 120 "the interrupted recording recovered" recovered
obscura ctl record stop > /dev/null 2>&1
# Nothing on the device is plaintext: every file there begins as an
# age file and holds no MP4 or JPEG/EXIF marker.
for f in $(find $rec $photos $inc -type f ! -name '*.sha256' | sort); do
    head -c 22 "$f" | grep -q '^age-encryption.org/v1' && echo "age-file=$(basename "$f")" || echo "not-age=$f"
    grep -qaE 'ftypiso|ftypmp4' "$f" && echo "plain-marker=$f ftyp"
    grep -qaP '\xff\xd8\xff\xe0|\xff\xd8\xff\xe1|Exif\x00\x00' "$f" && echo "plain-marker=$f jpeg"
done
(cd $rec && sha256sum -c ./*.sha256; cd $photos && sha256sum -c ./*.sha256) 2>&1 | sed 's/^/device-sum: /'
# The encrypted files, for the test machine's own age.
cp $rec/*.age $photos/*.age "$out"/
# The collecting computer: a real sshd, obscura pull with the identity.
cp "$out"/key.txt $k/identity.txt
ssh-keygen -q -t ed25519 -N '' -f $k/hostkey
ssh-keygen -q -t ed25519 -N '' -C puller@test -f $k/user
obscura keys add $k/user.pub > /dev/null
mkdir -p /run/sshd
/usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=$k/sshd.pid -h $k/hostkey -E $k/sshd.log
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $k/hostkey.pub)" > $k/known_hosts
sshd_up() { [ -s $k/sshd.pid ]; }; wait_for 60 "sshd to start" sshd_up
obscura pull --port 2222 --identity $k/user --known-hosts $k/known_hosts --identity-file $k/identity.txt \
    obscura-fetch@127.0.0.1 $k/dest > $k/pull.out 2> $k/pull.err; echo "pull-rc=$?"
sed 's/^/pull: /' $k/pull.out $k/pull.err
for f in "$k"/dest/*.mp4; do echo "pulled=$(basename "$f") frames=$(frames "$f")"; done
for f in "$k"/dest/*.jpg; do echo "pulled-photo=$(basename "$f") $(exiftool -s -s -s -Make -ImageSize "$f" | tr '\n' ' ')"; done
journalctl -u obscura --no-pager -o cat | grep -E "recovered an interrupted|encrypt|first frame taken|encoder " | sed 's/^/journal: /'
echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
