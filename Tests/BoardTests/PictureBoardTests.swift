import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The picture watch on the real camera driver: vimc's sensor has a test
/// pattern control (its subdevice's `test_pattern`, set with v4l2-ctl, as
/// a kernel driver's control is set). Switched mid-recording to a plain
/// white (a cloth over the lens: no detail) and to black (a lens in the
/// dark), then back to its colour bars. The driver's text over the picture
/// (`show_information`: frame counters, which no lens sees) is off while
/// the lens is covered. Measured there (`obscura watch --measures`): bars
/// with the text mean 74.6, detail 21.6; white mean 255, detail 0; black
/// mean 0.
@Suite struct PictureBoardTests {
    static let hold = 2.0, clear = 1.0

    @Test func aCoveredAndADarkLensAreDeclaredWithinTheirHoldAndClearWhileTheRecordingGoesOn() throws {
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            . board/virtual/waiting.sh
            rm -rf /tmp/svc; mkdir -p /tmp/svc
            \(BoardService.started(board: "virtual", recording: """
                folder = "/tmp/svc/rec"
                partial_folder = "/tmp/svc/incoming"
                size = "320x240"
                segment_seconds = 0
                min_free_space_mb = 16
                """, tables: """
                [health]
                hold_seconds = \(Self.hold)
                clear_seconds = \(Self.clear)
                # The loopback's silence is SoundBoardTests' part.
                sound_conditions = []
                """))
            now() { read -r t _ < /proc/uptime; echo "$t"; }
            sub=
            for d in /sys/class/video4linux/v4l-subdev*; do [ "$(cat "$d/name")" = "Sensor B" ] && sub=/dev/${d##*/}; done
            echo "subdev=$sub"
            # The menu's entries by name (tpg's: "100% White", "100% Black").
            entry() { v4l2-ctl -d "$sub" --list-ctrls-menus | sed -nE "s/^[[:space:]]+([0-9]+): $1\\$/\\1/p" | head -n 1; }
            white=$(entry "100% White"); black=$(entry "100% Black")
            echo "entries=white:$white black:$black"
            status() { ask status; }
            has() { holds picture "$1"; }
            lacks() { ! holds picture "$1"; }
            measured() { status | grep -q '"pictureMean"'; }
            # The status lists them (one look).
            listed() { status | grep -q "\\"pictureConditions\\":\\[[^]]*\\"$1\\""; }
            $o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
            wait_for 120 "the recording's first frame" said "first frame taken"
            wait_for 60 "a measure of the picture" measured
            echo "before=$(status | grep -o '"picture[A-Za-z]*":[^,}]*' | tr '\\n' ' ')"
            # The status LED over two seconds: steady on, or blinking (both values seen).
            echo "led-fine=$(led)"
            episode() {
                # The pattern changes between these two readings: the
                # lower bound is read from the first, the upper from the second.
                e=$(now); v4l2-ctl -d "$sub" --set-ctrl "test_pattern=$2,show_information=2"; a=$(now)
                wait_closely 60 "$1 to be declared" has "$1"; b=$(now)
                echo "declared-$1=$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')"
                echo "declared-$1-early=$(awk -v a="$e" -v b="$b" 'BEGIN { print b - a }')"
                # What one look at the log costs here (the wait's own lag).
                has "$1"; c=$(now)
                echo "poll-$1=$(awk -v b="$b" -v c="$c" 'BEGIN { print c - b }')"
                echo "led-$1=$(led)"
                echo "listed-$1=$(listed "$1" && echo yes)"
                # The metrics file is written each second.
                shown() { [ "$(metric "obscura_picture_condition{condition=\\"$1\\"}")" = 1 ]; }
                wait_for 10 "the metrics to show $1" shown "$1"
                echo "metrics-$1=$(grep -E '^obscura_picture_condition(_episodes_total)?\\{' /tmp/svc/obscura.prom | tr '\\n' ' ')"
                $o status --socket /tmp/svc/control.sock | grep '^picture:' | sed "s/^/status-$1: /"
                v4l2-ctl -d "$sub" --set-ctrl test_pattern=0,show_information=0; a=$(now)
                wait_closely 60 "$1 to clear" lacks "$1"; b=$(now)
                echo "cleared-$1=$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')"
            }
            episode no_detail "$white"
            episode dark "$black"
            echo "state=$(status | grep -o '"state":"[a-z]*"')"
            ask record stop | sed 's/^/ctl: /'
            wait_for 180 "the recording to finish" said "recording finished"
            f=$(ls /tmp/svc/rec/*.mp4 | head -n 1)
            echo "recordings=$(ls /tmp/svc/rec/*.mp4 | wc -l)"
            echo "frame-times=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\\n' ' ')"
            ffmpeg -v error -i "$f" -map 0:s:0 -f srt - | sed -E 's/<[^>]*>//g; s/^/srt: /'
            grep -E "picture: |recording finished" /tmp/svc/log | sed 's/^/log: /'
            kill -TERM $p; wait $p
            """, timeout: 600, shell: "bash")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!(value("subdev=") ?? "").isEmpty, "no vimc sensor subdevice: \(out)\(result.stderr)")
        #expect(value("entries=")?.contains("white: ") == false, "\(out)")
        // The frames' own intervals bound how late a look can be.
        let times = (value("frame-times=") ?? "").split(separator: " ").compactMap { Double($0) }.sorted()
        try #require(times.count > 10, "the recording has \(times.count) frames: \(out)")
        let slowest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        for condition in ["no_detail", "dark"] {
            // The wait sees a change at most one look at the log (and its
            // 0.2 s pause) after it happened: measured in the same run.
            let poll = (value("poll-\(condition)=").flatMap(Double.init) ?? 0) + 0.2
            #expect(value("listed-\(condition)=") == "yes", "the status does not list \(condition): \(out)")
            let bound = Self.hold + 2 + 2 * slowest + poll
            let declared = try #require(value("declared-\(condition)=").flatMap(Double.init), "\(condition) never declared: \(out)")
            #expect(declared <= bound, "\(condition) declared after \(declared) s (hold \(Self.hold) s + 2 s + two of the slowest frame interval \(slowest) s + a look at the status \(poll) s)")
            // (From a reading taken before the pattern changed: the hold can only look longer.)
            let early = try #require(value("declared-\(condition)-early=").flatMap(Double.init), "\(out)")
            #expect(early >= Self.hold, "\(condition) declared within \(early) s of the pattern's change (read before it), less than its \(Self.hold) s hold")
            let cleared = try #require(value("cleared-\(condition)=").flatMap(Double.init), "\(condition) never cleared: \(out)")
            #expect(cleared <= Self.clear + 2 + 2 * slowest + poll, "\(condition) cleared after \(cleared) s")
            #expect(value("metrics-\(condition)=")?.contains("obscura_picture_condition{condition=\"\(condition)\"} 1") == true, "\(out)")
            #expect(value("status-\(condition): ")?.contains(condition) == true, "\(out)")
        }
        // The status LED: steady while the picture is fine, blinking while a condition holds.
        #expect(value("led-fine=") == "1 ", "\(out)")
        #expect(value("led-no_detail=") == "0 1 ", "\(out)")
        #expect(value("metrics-dark=")?.contains("obscura_picture_condition_episodes_total{condition=\"no_detail\"} ") == true, "\(out)")
        // One recording, never interrupted, still recording after both.
        #expect(lines.contains("state=\"state\":\"recording\""), "\(out)")
        #expect(value("recordings=") == "1", "\(out)")
        #expect(lines.filter { $0.hasPrefix("log: ") && $0.contains("recording finished") }.count == 1, "\(out)")
        // Its marks, read back by ffmpeg: each condition declared and cleared, in order.
        // Black is also without detail: no_detail comes with dark, on the
        // same look (one cue) or a frame apart (its own).
        let marks = lines.filter { $0.hasPrefix("srt: picture: ") }.map { String($0.dropFirst(5)) }
        let said = marks.flatMap { $0.components(separatedBy: " · ") }.compactMap { mark -> String? in
            let words = mark.split(separator: " ")
            guard words.count > 2 else { return nil }
            return words[2] == "cleared" ? "\(words[1]) cleared" : String(words[1])
        }
        let dark = said.filter { $0.hasPrefix("dark") }, covered = said.filter { $0.hasPrefix("no_detail") }
        #expect(dark == ["dark", "dark cleared"] && covered == ["no_detail", "no_detail cleared", "no_detail", "no_detail cleared"], "marks: \(marks)\n\(out)")
        #expect(said.first == "no_detail" && said.last?.hasSuffix("cleared") == true && said.firstIndex(of: "dark") ?? 0 > 1, "marks: \(marks)")
    }

    /// A frozen camera on the real driver. vimc's picture is a still
    /// pattern (its frame counters fall between the grid's points: measured,
    /// it is declared frozen within the hold), so the test makes it live the
    /// way a scene is: its sensor's brightness control changed over and over
    /// (VIDIOC_S_CTRL on its subdevice), then left alone (frozen, while the
    /// camera's timestamps run on), then changed again.
    @Test func aFrozenCameraIsDeclaredWithinItsHoldAndClearsWhenThePictureMovesAgain() throws {
        let rate = 2.0
        let result = try VirtualBoard.run("""
            export PATH=$PATH:$(pwd)/board/virtual
            . board/virtual/waiting.sh
            rm -rf /tmp/svc; mkdir -p /tmp/svc
            \(BoardService.started(board: "virtual", recording: """
                folder = "/tmp/svc/rec"
                size = "320x240"
                segment_seconds = 0
                min_free_space_mb = 16
                """, tables: """
                [health]
                conditions = ["frozen"]
                hold_seconds = \(Self.hold)
                clear_seconds = \(Self.clear)
                frames_per_second = \(rate)
                sound_conditions = []
                """))
            now() { read -r t _ < /proc/uptime; echo "$t"; }
            since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; }
            sub=
            for d in /sys/class/video4linux/v4l-subdev*; do [ "$(cat "$d/name")" = "Sensor B" ] && sub=/dev/${d##*/}; done
            echo "subdev=$sub"
            has() { holds picture "$1"; }
            lacks() { ! holds picture "$1"; }
            frames() { metric obscura_recording_frames; }
            more() { n=$(( $(frames) + $1 )); grown() { [ "$(frames)" -ge "$n" ]; }; wait_for 120 "$1 more frames" grown; }
            # A live scene: the sensor's brightness changed 20 times a second
            # (VIDIOC_S_CTRL on its subdevice, as v4l2-ctl sets it, from one
            # process: a v4l2-ctl per change comes a second or more apart on
            # the slowed board, and looks that far apart see the same picture).
            # (It says when it made its first change: /tmp/svc/changing.)
            live() { rm -f /tmp/svc/still /tmp/svc/changing; perl -e '
                open(my $f, "+<", $ARGV[0]) or die "open $ARGV[0]: $!";
                for (my $i = 0; ! -e "/tmp/svc/still"; $i++) {
                    my $control = pack("LL", 0x00980900, 64 + $i % 128);   # V4L2_CID_BRIGHTNESS, a value
                    ioctl($f, 0xc008561c, $control) or die "VIDIOC_S_CTRL brightness: $!";
                    if ($i == 0) { open(my $t, ">", "/tmp/svc/changing") or die "changing: $!"; close($t); }
                    select(undef, undef, undef, 0.05);
                }' "$sub" & lp=$!; }
            changing() { [ -e /tmp/svc/changing ]; }
            still() { touch /tmp/svc/still; wait $lp; }
            $o ctl --socket /tmp/svc/control.sock record start | sed 's/^/ctl: /'
            wait_for 120 "the recording's first frame" said "first frame taken"
            live
            more 90
            echo "live-lacks-frozen=$(lacks frozen && echo yes)"
            # The scene stops changing between these two readings (the
            # lower bound from the first, the upper from the second).
            e=$(now); still; a=$(now)
            wait_closely 60 "frozen to be declared" has frozen; echo "declared-frozen=$(since $a)"; echo "declared-frozen-early=$(since $e)"
            has frozen; echo "poll-frozen=$(since $a)"
            $o status --socket /tmp/svc/control.sock | grep '^picture:' | sed 's/^/status-frozen: /'
            shown() { [ "$(metric 'obscura_picture_condition{condition="frozen"}')" = 1 ]; }
            wait_for 10 "the metrics to show frozen" shown
            echo "metrics-frozen=$(grep -E '^obscura_picture_condition\\{' /tmp/svc/obscura.prom | tr '\\n' ' ')"
            # (The upper bound read from after the scene's first change.)
            live; wait_for 60 "the scene to change" changing; a=$(now)
            wait_closely 60 "frozen to clear" lacks frozen; echo "cleared-frozen=$(since $a)"
            # Live until the recording has ended (a slowed board takes longer
            # than the hold to stop it).
            ask record stop | sed 's/^/ctl: /'
            wait_for 180 "the recording to finish" said "recording finished"
            still
            f=$(ls /tmp/svc/rec/*.mp4 | head -n 1)
            echo "frame-times=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$f" | tr '\\n' ' ')"
            ffmpeg -v error -i "$f" -map 0:s:0 -f srt - | sed -E 's/<[^>]*>//g; s/^/srt: /'
            grep -E "picture: |recording finished" /tmp/svc/log | sed 's/^/log: /'
            kill -TERM $p; wait $p
            """, timeout: 600, shell: "bash")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        #expect(!out.contains("gave up after"), "\(out)\(result.stderr)")
        #expect(value("live-lacks-frozen=") == "yes", "a live picture was declared frozen: \(out)")
        let times = (value("frame-times=") ?? "").split(separator: " ").compactMap { Double($0) }.sorted()
        try #require(times.count > 10, "the recording has \(times.count) frames: \(out)")
        let slowest = zip(times.dropFirst(), times).map { $0 - $1 }.max() ?? 0
        let declared = try #require(value("declared-frozen=").flatMap(Double.init), "\(out)")
        // The wait's own lag (one look at the log) and the look's spacing.
        let lag = try #require(value("poll-frozen=").flatMap(Double.init)) - declared + 0.2 + 1 / rate
        let early = try #require(value("declared-frozen-early=").flatMap(Double.init), "\(out)")
        #expect(early >= Self.hold, "frozen declared within \(early) s of the scene's last change (read before it), less than its \(Self.hold) s hold")
        #expect(declared <= Self.hold + 2 + 2 * slowest + lag,
                "frozen declared after \(declared) s (hold \(Self.hold) s + 2 s + two of the slowest frame interval \(slowest) s + \(lag) s)")
        let cleared = try #require(value("cleared-frozen=").flatMap(Double.init), "\(out)")
        #expect(cleared <= Self.clear + 2 + 2 * slowest + lag, "frozen cleared after \(cleared) s")
        #expect(value("status-frozen: ")?.hasPrefix("picture: frozen (watched for frozen") == true, "\(out)")
        #expect(value("metrics-frozen=")?.contains("obscura_picture_condition{condition=\"frozen\"} 1") == true, "\(out)")
        // vimc's still picture before the scene came alive may have been
        // declared and cleared too; then the test's own episode.
        let marks = lines.filter { $0.hasPrefix("srt: picture: ") }.map { String($0.dropFirst(5)) }
        let kinds = marks.map { $0.hasPrefix("picture: frozen cleared after") ? "cleared" : $0.hasPrefix("picture: frozen (the same picture") ? "declared" : $0 }
        #expect(kinds.suffix(2) == ["declared", "cleared"] && zip(kinds, kinds.dropFirst()).allSatisfy { $0 != $1 } && kinds.count <= 4,
                "marks: \(marks)\n\(out)")
    }
}
}
