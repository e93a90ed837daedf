#!/bin/sh
# The board's side of AnnouncedFilesBoardTests.anAnnouncedFileSurvivesAPowerCutRightAfterItsAnnouncement:
# it prints what the test reads.
# Arguments: CUTS (the power cuts of each kind)
cuts=$1
PATH=$PATH:$(pwd)/board/virtual; export PATH
. board/virtual/waiting.sh
o=$(pwd)/.build/debug/obscura
rm -rf /tmp/svc /tmp/cuts; mkdir -p /tmp/svc /tmp/cuts /mnt/check
cat > /tmp/svc/pattern.toml <<'T'
[board]
name = "Test pattern"
[camera]
id = "synthetic"
size = "320x240"
frame_rate = 10
pixel_format = "NV12"
[encoder]
preference = ["libx264"]
preset = "ultrafast"
[audio]
device = "none"
T
cat > /tmp/svc/obscura.toml <<'T'
board = "/tmp/svc/pattern.toml"
[recording]
folder = "/mnt/card/rec"
partial_folder = "/mnt/card/incoming"
fragment_seconds = 0.5
min_free_space_mb = 1
[photo]
folder = "/mnt/card/photos"
[control]
socket = "/tmp/svc/control.sock"
[live]
socket = "/tmp/svc/live.sock"
[metrics]
file = "/tmp/svc/obscura.prom"
T
dm-card make obscura-card /mnt/card 32 > /dev/null || exit 1
mkdir -p /mnt/card/rec /mnt/card/incoming /mnt/card/photos
serve() { $o run --config /tmp/svc/obscura.toml > /tmp/svc/log 2>&1 & p=$!; }
said() { grep -q "$1" /tmp/svc/log; }
ready() { said "ready: "; }
ask() { board/virtual/ask /tmp/svc/control.sock "$@" > /dev/null; }
# cut_on PATTERN N ROUND: the Nth log line matching PATTERN, as soon
# as it is written (a look every 5 ms), then the cut.
cut_on() {
    perl -e 'my ($f, $re, $n) = @ARGV; my $t = time; open(my $h, "<", $f) or die "$f: $!";
             while (time - $t < 240) { while (my $l = <$h>) { if ($l =~ /$re/ && --$n == 0) { print $l; exit 0 } }
             select(undef, undef, undef, 0.005); seek($h, 0, 1) } exit 1' /tmp/svc/log "$1" "$2" > /tmp/svc/said \
        || echo "gave up after 240 s waiting for \"$1\" in the service's log"
    dm-card cut obscura-card /tmp/cuts/"$3".img
}
# check ROUND FILE SAID...: the card as the cut left ROUND, as a
# reboot finds it: FILE there, its checksum, its frames, e2fsck.
check() {
    round=$1 file=$2; shift 2
    l=$(losetup -f --show /tmp/cuts/"$round".img)
    present=unmountable; sum=none; frames=none
    if mount -t ext4 "$l" /mnt/check 2> /tmp/svc/mount.err; then
        f=/mnt/check/${file#/mnt/card/}
        if [ -n "$file" ] && [ -f "$f" ]; then
            present=yes
            sum=$(cd "$(dirname "$f")" && sha256sum -c "$(basename "$f").sha256" 2>&1 | tail -1)
            case "$f" in *.mp4) frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f");; esac
        else
            present=no
        fi
        umount /mnt/check
    fi
    e2fsck -fn "$l" > /dev/null 2>&1; fsck=$?
    losetup -d "$l"; rm -f /tmp/cuts/"$round".img
    echo "checked $round: present=$present checksum=[$sum] frames=$frames fsck=$fsck said=[$*]"
}
partial_grown() { f=""; for g in /mnt/card/incoming/*.partial; do [ -e "$g" ] && { f=$g; break; }; done; [ -n "$f" ] && [ "$(stat -c %s "$f")" -gt 40000 ]; }

serve; wait_for 120 "the service to be ready" ready
i=1; while [ $i -le "$cuts" ]; do
    ask photo
    cut_on "photo /mnt/card/photos/" $i photo-$i
    check photo-$i "$(sed -n 's|.*photo \(/mnt/card/photos/[^:]*\):.*|\1|p' /tmp/svc/said)"
    i=$((i + 1))
done
i=1; while [ $i -le "$cuts" ]; do
    ask record start
    wait_for 120 "the recording to hold some fragments" partial_grown
    kill -9 $p; wait $p 2> /dev/null
    serve
    cut_on "recovered an interrupted recording: " 1 recovered-$i
    # shellcheck disable=SC2046  # (split on purpose: the file and its frames, two arguments)
    check recovered-$i $(sed -n 's|.*recovered an interrupted recording: \([^,]*\), \([0-9]*\) frames.*|\1 \2|p' /tmp/svc/said)
    wait_for 120 "the service to be ready" ready
    i=$((i + 1))
done
kill $p; wait $p 2> /dev/null
# A device to pull from: sshd on loopback, root's login by a key, one finished file.
s=/tmp/pullsrc; rm -rf $s; mkdir -p $s/device /run/sshd
ssh-keygen -q -t ed25519 -N '' -f $s/host; ssh-keygen -q -t ed25519 -N '' -f $s/user; cp $s/user.pub $s/authorized_keys
$o record --camera synthetic --size 320x240 --duration 1 --output $s/device/clip.mp4 > /dev/null 2>&1
(cd $s/device && sha256sum clip.mp4 > clip.mp4.sha256)
/usr/sbin/sshd -f /dev/null -p 2222 -h $s/host -E $s/sshd.log -o ListenAddress=127.0.0.1 -o PidFile=$s/sshd.pid \
    -o AuthorizedKeysFile=$s/authorized_keys -o StrictModes=no -o UsePAM=no -o "Subsystem=sftp internal-sftp"
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $s/host.pub)" > $s/known_hosts
i=1; while [ $i -le "$cuts" ]; do
    $o pull --port 2222 --identity $s/user --known-hosts $s/known_hosts --remote-folder $s/device root@127.0.0.1 /mnt/card/dest-$i > /tmp/svc/pull 2>&1
    rc=$?
    dm-card cut obscura-card /tmp/cuts/pull-$i.img
    echo "said pull-$i rc=$rc $(tail -1 /tmp/svc/pull)"
    check pull-$i /mnt/card/dest-$i/clip.mp4 rc=$rc
    i=$((i + 1))
done
kill "$(cat $s/sshd.pid)" 2> /dev/null
umount /mnt/card; dm-card remove obscura-card /mnt/card
