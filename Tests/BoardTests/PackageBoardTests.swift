import Foundation
import Testing
import TestSupport

/// The Debian package a board is given (deploy/build-deb), named by
/// OBSCURA_BOARD_DEB: Tests/arm64-board builds one for Debian 13 on arm64
/// and runs this on that board.
private let package = ProcessInfo.processInfo.environment["OBSCURA_BOARD_DEB"]
/// Other libcamera versions as .deb files, one folder each (0.4/, 0.7/):
/// board/virtual/libcamera-packages gathers them for Tests/arm64-board.
private let libcameraPackages = ProcessInfo.processInfo.environment["OBSCURA_BOARD_LIBCAMERA_PACKAGES"]

extension VirtualBoardTests {
/// Installing the .deb as a Raspberry Pi owner does: the board booted with
/// systemd and nothing of Obscura on it, `apt install ./obscura_….deb`, the
/// board profile set in the configuration; then the service records on the
/// record button and the recording is fetched with `obscura pull` over the
/// board's OpenSSH server, through the account the package set up.
@Suite(.enabled(if: package != nil, "OBSCURA_BOARD_DEB names no package (Tests/arm64-board builds one and runs this)"))
struct PackageBoardTests {
    /// The package's board, booted once for both tests: the .deb installed
    /// and the button's recording pulled, then libcamera swapped under it
    /// (when OBSCURA_BOARD_LIBCAMERA_PACKAGES names the packages).
    static let debPath = package.map { $0.hasPrefix("/") ? $0 : packageRoot + "/" + $0 }
    static let board: BoardScenarios? = debPath.map { path in
        var scenarios = [(name: "apt", script: aptScript(path))]
        var timeout = 600
        if let packages = libcameraPackages {
            scenarios.append((name: "libcamera", script: libcameraScript(path, packages.hasPrefix("/") ? packages : packageRoot + "/" + packages)))
            timeout += 1800
        }
        return BoardScenarios("package", scenarios: scenarios, timeout: timeout, options: ["--systemd", "--no-install"])
    }

    static func aptScript(_ path: String) -> String {
        #"""
            export PATH=$PATH:$(pwd)/board/virtual
            k=/tmp/pull; mkdir -p $k
            echo "before=$(command -v obscura || echo none)"
            # Everything it depends on is on the board already: no network needed.
            cp '\#(path)' /tmp/ && apt-get install -y --no-install-recommends /tmp/$(basename '\#(path)') > $k/apt.log 2>&1
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
            press() { gpio-sim press $1; sleep 0.15; gpio-sim release $1; }
            press record-button
            recording_open() { ls /var/lib/obscura/incoming/*.partial >/dev/null 2>&1; }; wait_for 120 "the recording file to open" recording_open
            sleep 3
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
            (cd $k/dest && sha256sum -c *.sha256) 2>&1 | sed 's/^/verify: /'
            for f in $k/dest/*.mp4; do
                echo "pulled=$(basename $f) frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 $f)"
            done
            kill $(cat $k/sshd.pid) 2>/dev/null
            pkill -f '^journalctl -u obscura -f' 2>/dev/null
            """#
    }

    @Test func theDebInstallsWithAptAndTheServiceRecordsOnTheButtonAndIsPulled() throws {
        let path = try #require(Self.debPath)
        try #require(FileManager.default.fileExists(atPath: path), "no package at \(path)")
        let result = try #require(Self.board).result(of: "apt")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("before=none"), Self.missing("before=none", ["before="], out + result.stderr))
        #expect(lines.contains("apt-rc=0"), Self.missing("apt-rc=0", ["apt"], out))
        let installed = lines.first { $0.hasPrefix("installed=") } ?? ""
        #expect(installed.hasPrefix("installed=\(VirtualBoard.arch) install ok installed") && installed.hasSuffix(" binary=/usr/bin/obscura"),
                "\(installed.debugDescription) \(Array(installed.utf8))")
        #expect(lines.contains("active=active"), Self.missing("active=active", ["active="], out))
        // `man obscura`, `man obscura.toml` and obscura re<TAB>, as the package installed them.
        #expect(lines.contains { $0.hasPrefix("man-obscura=0 obscura ") && $0.contains("camera recorder") }, Self.missing("man-obscura=0 obscura … camera recorder", ["man-obscura="], out))
        #expect(lines.contains("man-toml=0 OBSCURA.TOML(5)"), Self.missing("man-toml=0 OBSCURA.TOML(5)", ["man-toml="], out))
        #expect(lines.contains("completion=record"), Self.missing("completion=record", ["completion="], out))
        #expect(out.contains("journal: obscura: recording finished"), Self.missing("journal: obscura: recording finished", ["journal: "], out))
        #expect(lines.contains("pull-rc=0"), Self.missing("pull-rc=0", ["pull-rc=", "pull: "], out))
        let verified = lines.filter { $0.hasPrefix("verify: ") }
        #expect(!verified.isEmpty && verified.allSatisfy { $0.hasSuffix(": OK") }, "\(verified)")
        let pulled = lines.filter { $0.hasPrefix("pulled=") }
        #expect(pulled.count == 1, Self.missing("one pulled=", ["pulled="], out))
        let frames = pulled.first.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        // About three seconds of vimc: 1.5 fps on the emulated arm64 board, 30 on amd64.
        #expect(frames >= 3, "the pulled recording plays \(frames) frames")
    }

    /// A failed expectation's message: the line that was missing, then on
    /// the same line the board's lines that start with `related` (at most
    /// five, the last ones) and any wait that gave up, so that CI's digest
    /// of failures shows why; then the board's whole output.
    static func missing(_ wanted: String, _ related: [String], _ out: String) -> Comment {
        let lines = out.split(separator: "\n")
        let why = lines.filter { line in related.contains { line.hasPrefix($0) } }.suffix(5)
            + lines.filter { $0.hasPrefix("gave up after") }
        return "no line \(wanted); the board said: \(why.joined(separator: " | "))\nthe board printed:\n\(out)"
    }

    static func libcameraScript(_ path: String, _ folder: String) -> String {
        #"""
            export PATH=$PATH:$(pwd)/board/virtual
            . board/virtual/waiting.sh
            k=/tmp/swap; mkdir -p $k
            cp '\#(path)' /tmp/ && apt-get install -y --no-install-recommends /tmp/$(basename '\#(path)') > $k/apt.log 2>&1
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
                wait_for 300 "the service to open the camera through the $1 shim" layer_is $1 || return
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
                echo "recorded-$2=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of csv=p=0 $f)"
            }
            round 0.4 first
            # Upgrade: libcamera 0.7 and its IPA modules (trixie-backports), as files; 0.4 removed.
            apt-get install -y --no-install-recommends '\#(folder)'/0.7/*.deb > $k/up.log 2>&1
            echo "upgrade-rc=$?"; grep -m1 'restarting the recorder' $k/up.log | tr -d '\r' | sed 's/^/upgrade: /'
            apt-get remove -y libcamera0.4 > $k/rm4.log 2>&1; echo "remove-0.4-rc=$? obscura=$(dpkg-query -W -f='${Status}' obscura)"
            round 0.7 upgraded
            # Back: 0.4 and its IPA modules again; 0.7 removed.
            apt-get install -y --allow-downgrades --no-install-recommends '\#(folder)'/0.4/*.deb > $k/down.log 2>&1
            echo "downgrade-rc=$?"
            apt-get remove -y libcamera0.7 > $k/rm7.log 2>&1; echo "remove-0.7-rc=$? obscura=$(dpkg-query -W -f='${Status}' obscura)"
            round 0.4 back
            # libcamera 0.5.2 (Debian's, its IPA module built from source), where the folder has it.
            if [ -d '\#(folder)'/0.5 ]; then
                echo "has-0.5=yes"
                apt-get install -y --no-install-recommends '\#(folder)'/0.5/*.deb > $k/up5.log 2>&1
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
            """#
    }

    /// libcamera upgraded and taken back under the installed package, as an
    /// `apt upgrade` from backports and a downgrade would do it: 0.4 (the
    /// release's), then 0.7 and its IPA modules with 0.4 removed, then 0.4
    /// again with 0.7 removed; and where the folder has 0.5 (Debian's
    /// libcamera0.5 with a libcamera-ipa built from 0.5.2's source, which the
    /// archive lacks: board/virtual/libcamera-ipa-deb), 0.5 with 0.4 removed
    /// (going back is the same as from 0.7, shown once). Each time, without reinstalling Obscura, the
    /// package's trigger restarts the service, which opens the shim for the
    /// libcamera whose IPA modules are installed (the journal names it), lists
    /// vimc and records a file ffprobe reads. Last, a libcamera this build
    /// has no shim for (the shim of the one installed taken away): the service stays up and
    /// `obscura status` says why there is no camera.
    @Test(.enabled(if: libcameraPackages != nil, "OBSCURA_BOARD_LIBCAMERA_PACKAGES names no folder (Tests/arm64-board gathers them)"))
    func libcameraUpgradedAndTakenBackUnderTheInstalledPackageStillRecords() throws {
        let result = try #require(Self.board).result(of: "libcamera")
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        func value(_ key: String) -> String {
            lines.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) } ?? ""
        }
        #expect(value("apt-rc") == "0", "\(out)\(result.stderr)")
        var rounds = [("first", "0.4"), ("upgraded", "0.7"), ("back", "0.4")]
        if value("has-0.5") == "yes" {
            rounds += [("source", "0.5")]
            #expect(value("upgrade-0.5-rc") == "0", "\(out)")
            #expect(value("remove-0.4-again-rc") == "0 obscura=install ok installed", "\(out)")
        }
        for (label, version) in rounds {
            print("PackageBoardTests: \(label): \(value("layer-\(label)")); \(value("recorded-\(label)")) frames recorded")
            let shim = "/usr/lib/obscura/camera/libobscura-camera.so.\(version)"
            #expect(value("layer-\(label)").hasPrefix("obscura: camera layer: libcamera \(version) (/usr/lib/aarch64-linux-gnu/libcamera.so.\(version)) through the shim \(shim)"), "\(label): \(out)")
            #expect(value("devices-\(label)").hasPrefix("libcamera \(version) ") && value("devices-\(label)").contains("shim \(shim) "), "\(label): \(out)")
            #expect(value("camera-\(label)").hasSuffix("vimc.0 Sensor B"), "\(label): vimc is listed and opened: \(out)")
            #expect((Int(value("recorded-\(label)")) ?? 0) >= 2, "\(label): the recording holds at least the two frames seen: \(out)")
        }
        #expect(value("upgrade-rc") == "0" && value("downgrade-rc") == "0", "\(out)")
        #expect(lines.contains("upgrade: obscura: libcamera changed: restarting the recorder to open its camera shim for the new one"), "\(out)")
        #expect(value("remove-0.4-rc") == "0 obscura=install ok installed" && value("remove-0.7-rc") == "0 obscura=install ok installed", "\(out)")
        let gone = value("noshim-version")
        #expect(gone == (value("has-0.5") == "yes" ? "0.5" : "0.4"), "\(out)")
        #expect(value("noshim-status").hasPrefix("last error: camera: libcamera \(gone) (/usr/lib/aarch64-linux-gnu/libcamera.so.\(gone)) is installed; this build has shims for \(value("noshim-left")) (in /usr/lib/obscura/camera): "), "\(out)")
        #expect(!value("noshim-left").isEmpty && !value("noshim-left").contains(gone), "\(out)")
        #expect(value("noshim-active") == "active", "\(out)")
        #expect(value("noshim-devices").hasPrefix("obscura: error: libcamera \(gone)"), "\(out)")
    }
}
}
