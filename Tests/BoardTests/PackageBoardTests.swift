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
        var scenarios = [(name: "apt", script: "Package/apt", arguments: [path])]
        var timeout = 600
        if let packages = libcameraPackages {
            scenarios.append((name: "libcamera", script: "Package/libcamera",
                              arguments: [path, packages.hasPrefix("/") ? packages : packageRoot + "/" + packages]))
            timeout += 1800
        }
        return BoardScenarios("package", scenarios: scenarios, timeout: timeout, options: ["--systemd", "--no-install"])
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
