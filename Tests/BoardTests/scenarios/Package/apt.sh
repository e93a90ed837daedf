#!/bin/bash
# A scenario of PackageBoardTests (its test reads what this prints): the
# .deb installed with apt as an owner does, the service records on the
# record button, the recording pulled over the board's OpenSSH server.
# Arguments: PACKAGE (the .deb's path)
package=$1
PATH=$PATH:$(pwd)/board/virtual; export PATH
k=/tmp/pull; mkdir -p $k
echo "before=$(command -v obscura || echo none)"
# Everything it depends on is on the board already: no network needed.
cp "$package" /tmp/ && apt-get install -y --no-install-recommends "/tmp/$(basename "$package")" > $k/apt.log 2>&1
echo "apt-rc=$?"; tail -n 3 $k/apt.log | tr '\r' '\n' | sed 's/^/apt: /'; echo
echo "installed=$(dpkg-query -W -f='${Architecture} ${Status}' obscura) binary=$(command -v obscura)"
echo "depends=$(dpkg-query -W -f='${Depends}' obscura)"
# What an owner reads and types: the manuals, as man shows them,
# and bash-completion's loading of the package's completion.
MANWIDTH=80 man -P cat obscura > $k/man1 2>&1; echo "man-obscura=$? $(sed -n '/^NAME/{n;p;q}' $k/man1 | sed 's/^ *//')"
# (The page on standard output; what troff says on standard error, shown apart:
# trixie's groff 1.23 warns "cannot adjust line" at 80 columns for a long example.)
MANWIDTH=80 man -P cat obscura.toml > $k/man5 2> $k/man5.err; echo "man-toml=$? $(head -1 $k/man5 | awk '{print $1}')"
echo "man-toml-said=$(head -1 $k/man5.err)"
echo "completion=$(bash -c '. /usr/share/bash-completion/bash_completion; __load_completion obscura || exit 1
    f=$(complete -p obscura); f=${f##*-F }; f=${f%% *}
    COMP_LINE="obscura re"; COMP_POINT=10; COMP_WORDS=(obscura re); COMP_CWORD=1; $f obscura re obscura; echo "${COMPREPLY[*]}"')"
journalctl -u obscura -f -n all -o cat --no-pager | sed -u 's/^/journal: /' &
sed -i 's/^board = .*/board = "virtual"/' /etc/obscura/obscura.toml
systemctl restart obscura
. board/virtual/waiting.sh
answers() { obscura status > /dev/null 2>&1; }; wait_for 120 "the service to answer" answers
echo "active=$(systemctl is-active obscura)"
press() { gpio-sim press "$1"; sleep 0.15; gpio-sim release "$1"; }  # (a press holds the button 0.15 s: the stimulus)
press record-button
recording_open() { ls /var/lib/obscura/incoming/*.partial >/dev/null 2>&1; }; wait_for 120 "the recording file to open" recording_open
sleep 3  # (a recording of about three seconds)
press record-button
finished() { journalctl -u obscura | grep -q "recording finished"; }; wait_for 120 "the recording to finish" finished
ssh-keygen -q -t ed25519 -N '' -f $k/hostkey
ssh-keygen -q -t ed25519 -N '' -C puller@test -f $k/user
obscura keys add $k/user.pub | sed 's/^/keys-add: /'
mkdir -p /run/sshd
/usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=$k/sshd.pid -h $k/hostkey -E $k/sshd.log
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $k/hostkey.pub)" > $k/known_hosts
sshd_up() { [ -s $k/sshd.pid ]; }; wait_for 60 "sshd to start" sshd_up
obscura pull --port 2222 --identity $k/user --known-hosts $k/known_hosts obscura-fetch@127.0.0.1 $k/dest > $k/out 2>&1
echo "pull-rc=$?"; sed 's/^/pull: /' $k/out
(cd $k/dest && sha256sum -c ./*.sha256) 2>&1 | sed 's/^/verify: /'
for f in "$k"/dest/*.mp4; do
    echo "pulled=$(basename "$f") frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")"
done
kill "$(cat $k/sshd.pid)" 2>/dev/null
pkill -f '^journalctl -u obscura -f' 2>/dev/null
