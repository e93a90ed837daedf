#!/bin/bash
# A scenario of ServiceBoardTests (its test reads what this prints).
PATH=$PATH:$(pwd)/board/virtual; export PATH
rec=/var/lib/obscura/recordings
press() { gpio-sim press "$1"; sleep 0.15; gpio-sim release "$1"; }  # (a press holds the button 0.15 s: the stimulus)
echo "active=$(systemctl is-active obscura)"
# The microphone: the loopback's capture end, named in the
# configuration (the board's profile names none), and the
# service restarted to take it.
. board/virtual/waiting.sh
sed -i 's|^# device = "auto" .*|device = "hw:CARD=Loopback,DEV=1"|' /etc/obscura/obscura.toml
echo "audio-config=$(grep -c '^device = "hw:CARD=Loopback,DEV=1"' /etc/obscura/obscura.toml)"
systemctl restart obscura
ready_again() { [ "$(journalctl -u obscura -o cat | grep -c ': ready: ')" -ge 2 ]; }
wait_for 120 "the service to be ready with the microphone" ready_again
echo "led-idle=$(gpio-sim get record-led)"
press record-button
sleep 4  # (a recording of four seconds)
echo "led-recording=$(gpio-sim get record-led)"
obscura status | sed 's/^/status: /'
press record-button
finished() { journalctl -u obscura | grep -q "recording finished"; }; wait_for 120 "the recording to finish" finished
echo "led-stopped=$(gpio-sim get record-led)"
for f in "$rec"/*.mp4; do
    echo "file=$f frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
    echo "streams=$(ffprobe -v error -show_entries stream=codec_name,codec_type -of csv=p=0 "$f" | tr '\n' ' ')"
done
press photo-button
photo_done() { ls /var/lib/obscura/photos/*.jpg >/dev/null 2>&1; }; wait_for 120 "the photo" photo_done
for f in /var/lib/obscura/photos/*.jpg; do
    echo "photo=$f $(exiftool -s -s -s -Make -ImageSize "$f" | tr '\n' ' ')"
done
# Only the service's group may use its socket.
runuser -u nobody -- .build/debug/obscura status > /dev/null 2>&1; echo "nobody-status=$?"
echo "socket=$(stat -c %a:%G /run/obscura/control.sock) dir=$(stat -c %a:%G /run/obscura)"
press flash-button
flash_lit() { [ "$(gpio-sim get flash-led)" = 1 ]; }; wait_for 30 "the flash LED to light" flash_lit
echo "flash-led=$(gpio-sim get flash-led)"
# SIGUSR1 starts and stops recording, as with rpicam-vid.
systemctl kill --kill-whom=main -s USR1 obscura
sleep 3  # (three seconds of recording on the signal)
echo "usr1-$(obscura status | grep '^state:' | tr -d ' ')"
systemctl kill --kill-whom=main -s USR1 obscura
finished_twice() { [ "$(journalctl -u obscura | grep -c 'recording finished')" -ge 2 ]; }; wait_for 120 "the second recording to finish" finished_twice
echo "usr1-again-$(obscura status | grep '^state:' | tr -d ' ')"
# A kill in the middle of a recording: systemd restarts the service,
# which recovers the interrupted file.
# The kill comes once the file holds frames: a camera's first
# seconds sit in the encoder's lookahead, however slow the camera.
for f in "$rec"/*.mp4; do echo "pre-kill=$f"; done
press record-button
on_disk() {
    n=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 /var/lib/obscura/incoming/*.partial 2>/dev/null)
    [ "${n:-0}" -ge 5 ]
}
wait_for 180 "5 frames in the recording's file" on_disk
echo "frames-on-disk-at-kill=$n"
systemctl kill -s KILL obscura
restarted() { [ "$(systemctl show -p NRestarts --value obscura)" -ge 1 ] && [ "$(systemctl is-active obscura)" = active ]; }
wait_for 120 "systemd to restart the service" restarted
echo "restarts=$(systemctl show -p NRestarts --value obscura) active=$(systemctl is-active obscura)"
for f in "$rec"/*.mp4; do
    echo "after-kill=$f frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
# The manual pages as man shows them, and the bash completion as
# bash-completion loads it.
MANWIDTH=80 man -P cat obscura > /tmp/man1 2>&1; echo "manual=$? $(head -1 /tmp/man1 | awk '{print $1}') $(grep -c '^NAME' /tmp/man1)"
MANWIDTH=80 man -P cat obscura.toml > /tmp/man5 2>&1; echo "manual=$? $(head -1 /tmp/man5 | awk '{print $1}') $(grep -c '^NAME' /tmp/man5)"
echo "completion=$(bash -c '. /usr/share/bash-completion/bash_completion; __load_completion obscura || exit 1
    f=$(complete -p obscura); f=${f##*-F }; f=${f%% *}
    COMP_LINE="obscura re"; COMP_POINT=10; COMP_WORDS=(obscura re); COMP_CWORD=1; $f obscura re obscura; echo "${COMPREPLY[*]}"')"
# Each line under its priority: journald reads the <N> the service puts first.
journalctl -u obscura --no-pager -o cat -p notice..notice | sed 's/^/notice: /'
journalctl -u obscura --no-pager -o cat -p info..info | sed 's/^/info: /'
journalctl -u obscura --no-pager -o cat | grep -v "thread priority" | sed 's/^/journal: /'
