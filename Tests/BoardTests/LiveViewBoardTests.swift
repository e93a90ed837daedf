import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The live view on an installed kiosk, watched through the board's own
/// sshd with `obscura view` and a view key (`obscura keys add --view`):
/// while idle (the encoder started for the viewer and stopped after), then
/// while recording vimc (the recording's own stream, its file keeping every
/// frame it took). Nothing new listens. The view key gets nothing else: a
/// command, a shell, SFTP and forwarding are refused.
@Suite struct LiveViewBoardTests {
    static let script = #"""
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
            V="--port 2222 -i $k/user --known-hosts $k/known_hosts obscura-view@127.0.0.1"
            view() { obscura view $V --output $k/$1.h264 --seconds $2 2> $k/$1.err; }
            # Idle: the service encodes for the viewer alone. Its start and
            # end are waited for in the journal (a look at the status takes
            # seconds on a loaded board: a short view could pass unseen).
            said_n() { [ "$(journalctl -u obscura | grep -c "$1")" -ge $2 ]; }
            obscura view $V --output $k/idle.h264 2> $k/idle.err &
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
                echo "file-frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 $f)"
            done
            journalctl -u obscura -o cat | grep -E "live view|recording finished" | sed 's/^/journal: /'
            # The view key gets nothing but the view.
            S="-p 2222 -i $k/user -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=$k/known_hosts obscura-view@127.0.0.1"
            refused() { echo "refusal-$1: rc=$2 out=$(wc -c < $k/$1.out) $(tr '\n' ' ' < $k/$1.err | cut -c1-240)"; }
            timeout 60 ssh -T $S cat /etc/passwd > $k/command.out 2> $k/command.err; refused command $?
            timeout 60 ssh -T $S < /dev/null > $k/shell.out 2> $k/shell.err; refused shell $?
            echo ls | timeout 60 sftp -b - -P 2222 -i $k/user -o IdentitiesOnly=yes -o UserKnownHostsFile=$k/known_hosts obscura-view@127.0.0.1 > $k/sftp.out 2> $k/sftp.err; refused sftp $?
            timeout 60 ssh -N -o ExitOnForwardFailure=yes -R 127.0.0.1:2299:127.0.0.1:2222 $S > $k/remote.out 2> $k/remote.err; refused remote $?
            timeout 60 ssh -W 127.0.0.1:2222 $S < /dev/null > $k/stdio.out 2> $k/stdio.err; refused stdio $?
            journalctl -u obscura -o cat | grep -c "live view started" | sed 's/^/views-after-refusals: /'
            """#

    @Test func aKioskIsWatchedThroughItsSSHServerIdleAndRecordingWithNothingNewListening() throws {
        let result = try KioskBoard.board.result(of: "live-view")
        let out = result.stdout
        let board = BoardLines(out)
        let lines = board.lines
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        func frames(_ prefix: String) -> (count: Int, key: Bool) {
            let text = value(prefix) ?? ""
            let count = Int(text.split(separator: " ").first ?? "") ?? 0
            // (ffprobe may add a field after the first frame's key flag: "1,".)
            return (count, text.contains("first-key=1"))
        }
        #expect(value("recording-rc=") == "0", "\(out)")
        // A few frames prove the path ran; the first is a key frame, so
        // what a viewer gets decodes from its start.
        let idle = frames("idle-frames="), recording = frames("recording-frames=")
        #expect(idle.count >= 5 && idle.key, "\(out)")
        #expect(recording.count >= 5 && recording.key, "\(out)")
        #expect(lines.contains("listening: unchanged"), "\(out)")
        #expect(lines.contains("idle-state=state: idle"), "\(out)")
        // The recording took what it always takes: its file holds every
        // frame its summary counts.
        let summary = try #require(lines.first { $0.hasPrefix("journal: ") && $0.contains("recording finished: ") }, "\(out)")
        let taken = summary.components(separatedBy: ", ").first { $0.hasSuffix(" frames") }.flatMap { Int($0.split(separator: " ")[0]) }
        #expect(taken != nil && value("file-frames=").flatMap { Int($0) } == taken, "\(summary); \(value("file-frames=") ?? "no file")")
        // Who watched: the view key's comment, from the key sshd accepted
        // (not what the viewer's side said).
        #expect(lines.contains { $0.hasPrefix("keys: added SHA256:") && $0.hasSuffix("viewer@test") }, "\(out)")
        #expect(lines.filter { $0.hasPrefix("journal: obscura: live view started: viewer@test") }.count == 2, "\(out)")
        #expect(lines.filter { $0.hasPrefix("journal: obscura: live view ended: viewer@test") }.count == 2, "\(out)")
        // The view key's other asks: refused, nothing sent, and no view started by them.
        for (ask, says) in [("command", "may only watch the live view"), ("shell", "it asked for a shell"), ("sftp", "Connection closed"),
                            ("remote", "remote port forwarding failed"), ("stdio", "administratively prohibited")] {
            let line = try #require(value("refusal-\(ask): "), "\(out)")
            #expect(!line.hasPrefix("rc=0 ") && line.contains("out=0 ") && line.contains(says), "\(ask): \(line)")
        }
        #expect(value("views-after-refusals: ") == "2", "\(out)")
    }
}
}
