#!/bin/bash
# A scenario of ServiceBoardTests (its test reads what this prints).
PATH=$PATH:$(pwd)/board/virtual; export PATH
sed -i 's/^enabled = false/enabled = true/' /etc/obscura/obscura.toml
systemctl restart obscura
. board/virtual/waiting.sh
showing() { obscura status 2>/dev/null | grep -q "^preview: showing"; }; wait_for 120 "the preview to show" showing
obscura status | sed 's/^/status: /'
gpio-sim press record-button; sleep 0.15; gpio-sim release record-button  # (a press holds the button 0.15 s: the stimulus)
sleep 4  # (a recording of four seconds)
gpio-sim press record-button; sleep 0.15; gpio-sim release record-button  # (a press holds the button 0.15 s: the stimulus)
finished() { journalctl -u obscura | grep -q "recording finished"; }; wait_for 120 "the recording to finish" finished
for f in /var/lib/obscura/recordings/*.mp4; do
    echo "file=$f frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
journalctl -u obscura --no-pager -o cat | grep -E "preview|recording finished" | sed 's/^/journal: /'
