#!/bin/sh
# The board's side of DriveBoardTests.aDriveThatHangsHoldsUpNeitherStatusNorButtons: it prints what the test reads.
# Arguments: LEAST
least=$1
. board/virtual/waiting.sh
up() { cut -d' ' -f1 /proc/uptime; }
press() { gpio-sim press "$1"; sleep 0.15; gpio-sim release "$1"; }  # (a press holds the button 0.15 s: the stimulus)
frames_now() { obscura status | sed -n 's/^frames: \([0-9]*\) .*/\1/p'; }
# The network drive: sshfs (its SFTP server run directly, as its
# ssh command: nothing on the network), every file shown as the
# obscura user's.
modprobe fuse
mkdir -p /srv/net /media/net
printf '#!/bin/sh\nexec /usr/lib/openssh/sftp-server\n' > /usr/local/bin/sftp-direct && chmod +x /usr/local/bin/sftp-direct
sshfs -o ssh_command=/usr/local/bin/sftp-direct,allow_other,uid="$(id -u obscura)",gid="$(id -g obscura)" board:/srv/net /media/net \
    || echo "sshfs failed"
findmnt -n -o SOURCE,FSTYPE /media/net | sed 's/^/mounted: /'
mkdir -p /media/net/obscura/recordings /media/net/.obscura-incoming
sed -i '/^\[usb\]/,/^\[/ { s|^drive = .*|drive = "/media/net"| }' /etc/obscura/obscura.toml
sed -i 's/^#* *segment_seconds = .*/segment_seconds = 0/' /etc/obscura/obscura.toml
systemctl restart obscura
on_net() { obscura status | grep -q '^storage usb: /media/net/obscura/recordings, .*MiB free'; }
wait_for 60 "the network drive in the status" on_net
obscura ctl record start | sed 's/^/start: /'
some() { [ "$(frames_now)" -ge "$least" ] 2>/dev/null; }
wait_for 300 "$least frames recorded on the network drive" some
fs=$(pgrep -x sshfs)
hang=$(up); at_hang=$(frames_now)
kill -STOP "$fs"
echo "hang uptime=$hang frames=$at_hang"
# While every call into the drive blocks:
obscura status > /tmp/hung-status; echo "status rc=$? uptime=$(up)"
sed 's/^/hung: /' /tmp/hung-status
obscura ctl flash on | sed 's/^/ctl: /'; echo "ctl uptime=$(up)"
press photo-button
photo() { ls /var/lib/obscura/photos/*.jpg.sha256 > /dev/null 2>&1; }
wait_for 300 "a photo on the SD card while the drive hangs" photo && echo "photo uptime=$(up)"
silent() { obscura status | grep -q '^storage usb: /media/net/obscura/recordings, not answering'; }
wait_for 300 "the status to say the drive does not answer" silent && echo "silent uptime=$(up)"
obscura status | grep '^storage' | sed 's/^/during: /'
ten() { awk -v a="$hang" -v b="$(up)" 'BEGIN { exit !(b - a >= 10) }'; }
# (The hang lasts until all of that happened, ten seconds at least.)
wait_for 30 "ten seconds of the hang" ten
echo "release uptime=$(up)"
kill -CONT "$fs"
# Let go: the recording goes on on the drive.
more() { [ "$(frames_now)" -gt "$at_hang" ] 2>/dev/null; }
wait_for 300 "the recording to go on after the hang" more && echo "advanced uptime=$(up) frames=$(frames_now)"
answers() { obscura status | grep -q '^storage usb: /media/net/obscura/recordings, .*MiB free'; }
wait_for 30 "the drive to answer again in the status" answers
obscura ctl record stop > /dev/null
done_() { ls /media/net/obscura/recordings/*.sha256 > /dev/null 2>&1; }
wait_for 300 "the recording finished on the drive" done_
# A recording started while the drive hangs goes to the SD card.
kill -STOP "$fs"; echo "hang2 uptime=$(up)"
obscura ctl record start | sed 's/^/start-hung: /'; echo "started uptime=$(up)"
sd_frames() { obscura status | grep -q '^file: /var/lib/obscura/recordings/' && [ "$(frames_now)" -ge "$least" ] 2>/dev/null; }
wait_for 300 "$least frames on the SD card while the drive hangs" sd_frames
obscura ctl record stop > /dev/null
sd_done() { ls /var/lib/obscura/recordings/*.mp4.sha256 > /dev/null 2>&1; }
wait_for 300 "the SD card's recording finished while the drive hangs" sd_done && echo "sd-done uptime=$(up)"
echo "release2 uptime=$(up)"
kill -CONT "$fs"
again() { journalctl -u obscura | grep -q 'recordings go to it again'; }
wait_for 60 "the drive to be used again" again
(cd /var/lib/obscura/recordings && sha256sum -c ./*.sha256 | sed 's/^/sd-sum: /')
echo "active=$(systemctl is-active obscura) restarts=$(systemctl show -p NRestarts --value obscura)"
cd /media/net/obscura/recordings && sha256sum -c ./*.sha256 | sed 's/^/sum: /'
for f in *.mp4; do echo "file=$f frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f")"; done
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | grep -v "^obscura: encoder" | sed 's/^/journal: /'
