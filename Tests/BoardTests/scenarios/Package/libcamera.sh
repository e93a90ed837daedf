#!/bin/bash
# shellcheck disable=SC2012  # (ls picks the service's own files, whose names have no odd characters)
# A scenario of PackageBoardTests (its test reads what this prints): the
# package installed, then libcamera swapped under it.
# Arguments: PACKAGE (the .deb's path) FOLDER (libcamera's packages, a
# folder for each version: 0.4/, 0.7/, 0.5/)
package=$1 folder=$2
PATH=$PATH:$(pwd)/board/virtual; export PATH
. board/virtual/waiting.sh
k=/tmp/swap; mkdir -p $k
cp "$package" /tmp/ && apt-get install -y --no-install-recommends "/tmp/$(basename "$package")" > $k/apt.log 2>&1
echo "apt-rc=$?"
sed -i 's/^board = .*/board = "virtual"/' /etc/obscura/obscura.toml
systemctl restart obscura
layers() { journalctl -u obscura -o cat --no-pager | grep 'camera layer: '; }
layer_is() { layers | tail -1 | grep -q "libobscura-camera.so.$1 "; }
finished_count() { journalctl -u obscura -o cat --no-pager | grep -c 'recording finished'; }
has_frames() {
    local f; f=$(ls /var/lib/obscura/incoming/*.partial 2>/dev/null | head -1)
    [ -n "$f" ] && [ "$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f" 2>/dev/null || echo 0)" -ge 2 ] 2>/dev/null
}
round() { # shim version, label
    wait_for 300 "the service to open the camera through the $1 shim" layer_is "$1" || return
    echo "layer-$2=$(layers | tail -1)"
    echo "devices-$2=$(obscura devices 2>&1 | grep -m1 '^libcamera ')"
    camera_open() { obscura status 2>/dev/null | grep -q '^camera: [^n]'; }
    wait_for 120 "the camera to be open" camera_open
    echo "camera-$2=$(obscura status | grep '^camera: ')"
    local before; before=$(finished_count)
    obscura ctl record start > /dev/null
    wait_for 300 "the recording to hold two frames" has_frames
    obscura ctl record stop > /dev/null
    finished() { [ "$(finished_count)" -gt "$before" ]; }
    wait_for 120 "the recording to finish" finished
    local f; f=$(ls -t /var/lib/obscura/recordings/*.mp4 | head -1)
    echo "recorded-$2=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
}
round 0.4 first
# Upgrade: libcamera 0.7 and its IPA modules (trixie-backports), as files; 0.4 removed.
apt-get install -y --no-install-recommends "$folder"/0.7/*.deb > $k/up.log 2>&1
echo "upgrade-rc=$?"; grep -m1 'restarting the recorder' $k/up.log | tr -d '\r' | sed 's/^/upgrade: /'
apt-get remove -y libcamera0.4 > $k/rm4.log 2>&1; echo "remove-0.4-rc=$? obscura=$(dpkg-query -W -f='${Status}' obscura)"
round 0.7 upgraded
# Back: 0.4 and its IPA modules again; 0.7 removed.
apt-get install -y --allow-downgrades --no-install-recommends "$folder"/0.4/*.deb > $k/down.log 2>&1
echo "downgrade-rc=$?"
apt-get remove -y libcamera0.7 > $k/rm7.log 2>&1; echo "remove-0.7-rc=$? obscura=$(dpkg-query -W -f='${Status}' obscura)"
round 0.4 back
# libcamera 0.5.2 (Debian's, its IPA module built from source), where the folder has it.
if [ -d "$folder"/0.5 ]; then
    echo "has-0.5=yes"
    apt-get install -y --no-install-recommends "$folder"/0.5/*.deb > $k/up5.log 2>&1
    echo "upgrade-0.5-rc=$?"
    apt-get remove -y libcamera0.4 > $k/rm4b.log 2>&1; echo "remove-0.4-again-rc=$? obscura=$(dpkg-query -W -f='${Status}' obscura)"
    round 0.5 source
    current=0.5
else
    current=0.4
fi
# A libcamera this build has no shim for: the shim of the one installed taken away.
mv /usr/lib/obscura/camera/libobscura-camera.so.$current $k/
echo "noshim-version=$current"
echo "noshim-left=$(ls /usr/lib/obscura/camera | sed 's/^libobscura-camera\.so\.//' | sort -V | paste -sd, | sed 's/,/, /g')"
systemctl restart obscura
says_why() { obscura status 2>/dev/null | grep -q "^last error: camera: libcamera $current"; }
wait_for 120 "the status to say why there is no camera" says_why
echo "noshim-status=$(obscura status | grep '^last error: ')"
echo "noshim-active=$(systemctl is-active obscura)"
echo "noshim-devices=$(obscura devices 2>&1 | grep -m1 '^obscura: error')"
