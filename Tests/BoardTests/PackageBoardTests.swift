import Foundation
import Testing
import TestSupport

/// The Debian package a board is given (deploy/build-deb), named by
/// OBSCURA_BOARD_DEB: Tests/arm64-board builds one for Debian 13 on arm64
/// and runs this on that board.
private let package = ProcessInfo.processInfo.environment["OBSCURA_BOARD_DEB"]

extension VirtualBoardTests {
/// Installing the .deb as a Raspberry Pi owner does: the board booted with
/// systemd and nothing of Obscura on it, `apt install ./obscura_….deb`, the
/// board profile set in the configuration; then the service records on the
/// record button and the recording is fetched with `obscura pull` over the
/// board's OpenSSH server, through the account the package set up.
@Suite(.enabled(if: package != nil, "OBSCURA_BOARD_DEB names no package (Tests/arm64-board builds one and runs this)"))
struct PackageBoardTests {
    @Test func theDebInstallsWithAptAndTheServiceRecordsOnTheButtonAndIsPulled() throws {
        let deb = try #require(package)
        let path = deb.hasPrefix("/") ? deb : packageRoot + "/" + deb
        try #require(FileManager.default.fileExists(atPath: path), "no package at \(path)")
        let result = try VirtualBoard.run(#"""
            export PATH=$PATH:$(pwd)/board/virtual
            k=/tmp/pull; mkdir -p $k
            echo "before=$(command -v obscura || echo none)"
            # Everything it depends on is on the board already: no network needed.
            cp '\#(path)' /tmp/ && apt-get install -y --no-install-recommends /tmp/$(basename '\#(path)') > $k/apt.log 2>&1
            echo "apt-rc=$?"; tail -n 3 $k/apt.log | tr '\r' '\n' | sed 's/^/apt: /'; echo
            echo "installed=$(dpkg-query -W -f='${Architecture} ${Status}' obscura) binary=$(command -v obscura)"
            echo "depends=$(dpkg-query -W -f='${Depends}' obscura)"
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
            """#, timeout: 600, options: ["--systemd", "--no-install"])
        let out = result.stdout
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.contains("before=none"), "\(out)\(result.stderr)")
        #expect(lines.contains("apt-rc=0"), "\(out)")
        let installed = lines.first { $0.hasPrefix("installed=") } ?? ""
        #expect(installed.hasPrefix("installed=\(VirtualBoard.arch) install ok installed") && installed.hasSuffix(" binary=/usr/bin/obscura"),
                "\(installed.debugDescription) \(Array(installed.utf8))")
        #expect(lines.contains("active=active"), "\(out)")
        #expect(out.contains("journal: obscura: recording finished"), "\(out)")
        #expect(lines.contains("pull-rc=0"), "\(out)")
        let verified = lines.filter { $0.hasPrefix("verify: ") }
        #expect(!verified.isEmpty && verified.allSatisfy { $0.hasSuffix(": OK") }, "\(verified)")
        let pulled = lines.filter { $0.hasPrefix("pulled=") }
        #expect(pulled.count == 1, "\(out)")
        let frames = pulled.first.flatMap { $0.split(separator: "=").last.flatMap { Int($0) } } ?? 0
        // About three seconds of vimc: 1.5 fps on the emulated arm64 board, 30 on amd64.
        #expect(frames >= 3, "the pulled recording plays \(frames) frames")
    }
}
}
