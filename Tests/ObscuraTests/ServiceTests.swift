import Foundation
import ObscuraFormats
import Testing
import TestSupport
@testable import ObscuraGPIO
@testable import ObscuraService
import ObscuraPhoto
import Logging
import ObscuraSystem
@testable import ObscuraFiles

@Suite struct DebouncerTests {
    /// A press as a real contact makes it: a burst of 1–6 edges over 0–5 ms
    /// settling on the new level.
    private func chatter(_ debouncer: inout Debouncer, to level: Bool, at start: UInt64,
                         using rng: inout some RandomNumberGenerator) -> UInt64 {
        let bounces = Int.random(in: 0...5, using: &rng)
        var t = start
        var l = level
        for _ in 0..<bounces {
            debouncer.edge(l, at: t)
            l.toggle()
            t += UInt64.random(in: 0...1_000_000, using: &rng)  // up to 1 ms apart, 0–5 ms in all
        }
        debouncer.edge(level, at: t)
        return t
    }

    @Test func aThousandChatteringPressesGiveExactlyAThousandPresses() {
        var rng = SystemRandomNumberGenerator()
        var d = Debouncer(period: .milliseconds(20))
        var presses = 0, releases = 0
        var now: UInt64 = 1_000_000_000
        for _ in 0..<1000 {
            var last = chatter(&d, to: true, at: now, using: &rng)
            // Time passes in small steps, as the watcher wakes.
            var t = last
            while t < last + 150_000_000 {
                t += 5_000_000
                if let tr = d.advance(to: t) { tr.level ? (presses += 1) : (releases += 1) }
            }
            last = chatter(&d, to: false, at: t, using: &rng)
            t = last
            while t < last + 150_000_000 {
                t += 5_000_000
                if let tr = d.advance(to: t) { tr.level ? (presses += 1) : (releases += 1) }
            }
            now = t + 10_000_000
        }
        #expect(presses == 1000)
        #expect(releases == 1000)
    }

    @Test func glitchesShorterThanTheDebouncePeriodAreIgnored() {
        var d = Debouncer(period: .milliseconds(20))
        var t: UInt64 = 0
        for _ in 0..<500 {
            // Up for 0–15 ms, then back down: noise, not a press.
            d.edge(true, at: t)
            t += UInt64.random(in: 0...15_000_000)
            d.edge(false, at: t)
            t += 30_000_000
            #expect(d.advance(to: t) == nil)
        }
        #expect(d.level == false)
    }

    @Test func aPressIsStampedWithTheFirstEdgeOfItsBurst() {
        var d = Debouncer(period: .milliseconds(20))
        d.edge(true, at: 100)
        d.edge(false, at: 1_000_100)
        d.edge(true, at: 2_000_100)
        #expect(d.advance(to: 10_000_000) == nil)  // not settled yet
        #expect(d.advance(to: 22_000_100) == Debouncer.Transition(level: true, timestampNanoseconds: 100))
        // A read of the line wins over edges (an overflowed event queue).
        d.edge(false, at: 30_000_000)
        #expect(d.advance(to: 60_000_000, observed: true) == nil)
    }

    /// A reader held up (a busy board) gets a release and the next press,
    /// 150 ms apart, in one read: both count, as their timestamps say.
    @Test func aReleaseAndAPressReadTogetherLateAreTwoTransitions() {
        var d = Debouncer(period: .milliseconds(20), initialLevel: true)
        #expect(d.edge(false, at: 1_000_000_000) == nil)
        let release = d.edge(true, at: 1_150_000_000)
        #expect(release == Debouncer.Transition(level: false, timestampNanoseconds: 1_000_000_000))
        #expect(d.advance(to: 1_400_000_000, observed: true) == Debouncer.Transition(level: true, timestampNanoseconds: 1_150_000_000))
        // A glitch read late is still a glitch: 5 ms up, then down again.
        #expect(d.edge(false, at: 2_000_000_000) == nil)
        #expect(d.edge(true, at: 2_005_000_000) == nil)
        #expect(d.advance(to: 2_500_000_000, observed: true) == nil)
        #expect(d.level == true)
    }

    @Test func flashModesCycleAndShowOnTheirLED() {
        #expect(FlashMode.auto.next == .on && FlashMode.on.next == .off && FlashMode.off.next == .auto)
        #expect(FlashMode.on.ledPattern == .on && FlashMode.off.ledPattern == .off)
        #expect(FlashMode.auto.ledPattern == .flashAuto)
    }
}

private func write(_ text: String, _ name: String) -> String {
    // A folder per file: tests running side by side never share one.
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-config-\(getpid())/\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let path = dir.appendingPathComponent(name).path
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    return path
}

@Suite struct ConfigurationTests {
    @Test func everyShippedProfileLoads() throws {
        let dir = packageRoot + "/board/profiles"
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".toml") }.sorted()
        #expect(names == ["pi4b.toml", "pi5.toml", "usb-uvc.toml", "virtual.toml", "zero2w.toml"])
        for name in names {
            let profile = try BoardProfile(contentsOf: dir + "/" + name)
            #expect(!profile.name.isEmpty)
            #expect(!profile.encoders.isEmpty)
        }
        let pi4 = try BoardProfile(contentsOf: dir + "/pi4b.toml")
        #expect(pi4.encoders == ["v4l2m2m", "libx264"])
        #expect(pi4.gpio?.chip == "pinctrl-bcm2711" && pi4.gpio?.recordButton == "GPIO17")
        #expect(try BoardProfile(contentsOf: dir + "/pi5.toml").encoders == ["libx264"])
        #expect(try BoardProfile(contentsOf: dir + "/usb-uvc.toml").gpio == nil)
        let virtual = try BoardProfile(contentsOf: dir + "/virtual.toml")
        #expect(virtual.gpio?.flashOutput == "flash-fire" && virtual.gpio?.activeLowButtons == false)
        // The shipped sample configuration is valid too.
        let sample = try ServiceConfiguration(contentsOf: packageRoot + "/deploy/obscura.toml")
        #expect(sample.board == "pi4b" && sample.segmentSeconds == 300)
    }

    /// What loading `text` as a board profile (or a configuration) says,
    /// its path shown as F.
    private func loadFailure(_ text: String, profile: Bool) -> String {
        let path = write(text, "bad.toml")
        do {
            if profile { _ = try BoardProfile(contentsOf: path) } else { _ = try ServiceConfiguration(contentsOf: path) }
            return "no error"
        } catch {
            return error.description.replacingOccurrences(of: path, with: "F")
        }
    }

    @Test func errorsNameFileLineAndKey() throws {
        func failure(_ text: String, profile: Bool = true) -> String { loadFailure(text, profile: profile) }
        #expect(failure("[board]\nname = \"x\"\n[camera]\nsize = \"big\"\n") ==
                "F:4: camera.size: \"big\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080")
        #expect(failure("[board]\nname = \"x\"\n\n[encoder]\npreference = [\"libx264\", \"nvenc\"]\n") ==
                "F:5: encoder.preference: \"nvenc\" is not allowed; allowed: v4l2m2m, libx264, libx265")
        #expect(failure("[board]\nname = \"x\"\ncolour = \"red\"\n") == "F:3: board.colour: unknown key")
        #expect(failure("[camera]\nsize = \"640x480\"\n") == "F: board.name: is required")
        #expect(failure("[board]\nname = x\n") == "F:2: board.name: \"x\" is not a value (strings go in quotes)")
        #expect(failure("[board]\nname = \"x\"\n[gpio]\nchip = \"c\"\n[gpio.buttons]\nrecord = \"L\"\n[gpio.leds]\nrecord = \"L\"\n") ==
                "F:3: gpio: line \"L\" is used twice")
        #expect(failure("[recording]\nframe_rate = 1000\n", profile: false) ==
                "F:2: recording.frame_rate: 1000.0 is not allowed; allowed: 1–240 frames per second")
        #expect(failure("[recording]\ncontainer = \"avi\"\n", profile: false) ==
                "F:2: recording.container: \"avi\" is not allowed; allowed: mp4, mov, mkv")
        #expect(failure("[recording]\nfolder = \"recordings\"\n", profile: false) ==
                "F:2: recording.folder: \"recordings\" must be an absolute path")
        #expect(failure("[recording]\nfolder = \"/a/rec\"\npartial_folder = \"/a/rec\"\n", profile: false) ==
                "F:3: recording.partial_folder: \"/a/rec\" must differ from the recordings and photos folders: they are shared, files being written are not")
        #expect(failure("[audio]\ncodec = \"opus\"\n", profile: false) ==
                "F:2: audio.codec: opus goes only in mkv recordings; set recording.container = \"mkv\" or use aac")
        #expect(failure("[board]\nname = \"x\"\n[audio]\nchannels = 9\n") == "F:4: audio.channels: 9 is not allowed; allowed: 1–8 channels")
        #expect(failure("[recording]\nsegment_seconds = \"five\"\n", profile: false) ==
                "F:2: recording.segment_seconds: must be an integer, not a string")
    }

    /// What a hand-written subset got wrong, read as TOML 1.0 reads it;
    /// valid TOML no setting takes is refused naming the key, never misread.
    @Test func validTOMLIsReadWholeAndWhatNoSettingTakesIsRefused() throws {
        func failure(_ text: String, profile: Bool = false) -> String { loadFailure(text, profile: profile) }
        // An apostrophe inside a double-quoted string, in a multi-line array.
        let a = try TOMLDocument(file: "f", text: "[encoder]\npreference = [\n  \"it's\", # one\n  'b',\n]\n")
        #expect(a.values["encoder.preference"]?.value == .array([.string("it's"), .string("b")]))
        #expect(a.values["encoder.preference"]?.line == 2)
        // Escapes, inline tables, dotted keys, multi-line strings, a byte-order mark.
        let b = try TOMLDocument(file: "f", text: "\u{FEFF}s = \"caf\\u00e9 \\U0001F4F7\\b\\r\"\ngpio = { chip = \"c\", buttons.record = \"L\" }\naudio.rate = 48_000\nm = \"\"\"\none\ntwo\"\"\"\n")
        #expect(b.values["s"]?.value == .string("café \u{1F4F7}\u{8}\r"))
        #expect(b.values["gpio.chip"]?.value == .string("c"))
        #expect(b.values["gpio.buttons.record"]?.value == .string("L"))
        #expect(b.values["audio.rate"]?.value == .integer(48_000))
        #expect(b.values["m"]?.value == .string("one\ntwo"))
        // Invalid TOML is refused, with its line.
        #expect(failure("[recording]\nsegment_seconds = 20__000\n").hasPrefix("F:2: recording.segment_seconds: not valid TOML: "))
        #expect(failure("[recording]\nfolder = \"/a\"\nfolder = \"/b\"\n").hasPrefix("F:3"))
        #expect(failure("[recording]\n[recording]\n").hasPrefix("F:2"))
        // A configuration saved with CRLF line endings is read, not ignored.
        let crlf = try ServiceConfiguration(contentsOf: write("[recording]\r\nfolder = \"/srv/rec\"\r\nsegment_seconds = 60\r\n", "crlf.toml"))
        #expect(crlf.recordingsFolder == "/srv/rec" && crlf.segmentSeconds == 60)
        // Valid TOML of a kind no setting takes.
        #expect(failure("[recording]\nstart = 2026-11-23T10:00:00Z\n") ==
                "F:2: recording.start: is a date or time; no setting takes one (allowed: strings, numbers, true/false, arrays of them, tables)")
        #expect(failure("[[board]]\nname = \"x\"\n", profile: true).hasPrefix("F:1: board: is an array of tables"))
        #expect(failure("[recording]\nfolder = \"/a\"\n[recordings]\n") == "F:3: recordings: unknown table")
        #expect(failure("recording = { folder = \"/a\", colour = 1 }\n") == "F:1: recording.colour: unknown key")
    }

    @Test func multiLineArraysAndCommentsParse() throws {
        let doc = try TOMLDocument(file: "f", text: "# c\n[a] # table\nlist = [\n  \"x\", # one\n  'y#z',\n]\nn = 1_000\nf = 2.5\nb = true\n")
        #expect(doc.values["a.list"]?.value == .array([.string("x"), .string("y#z")]))
        #expect(doc.values["a.n"]?.value == .integer(1000))
        #expect(doc.values["a.f"]?.value == .float(2.5))
        #expect(doc.values["a.b"]?.value == .bool(true))
    }
}

@Suite struct StorageTests {
    @Test func loopRecordingDeletesTheOldestFinishedFilesToKeepTheQuota() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-loop-\(getpid())").path
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Ten finished recordings of 100 KiB, a minute apart, and one being written.
        for i in 0..<10 {
            let path = "\(dir)/clip-\(i).mp4"
            _ = FileManager.default.createFile(atPath: path, contents: Data(count: 100 << 10))
            _ = FileManager.default.createFile(atPath: path + ".sha256", contents: Data("x".utf8))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000 + Double(i) * 60)], ofItemAtPath: path)
        }
        _ = FileManager.default.createFile(atPath: "\(dir)/clip-10.mp4.partial", contents: Data(count: 500 << 10))
        let keeper = StorageKeeper(folder: dir, quotaBytes: 450 << 10, minFreeBytes: 0)
        let deleted = keeper.enforce(protecting: ["\(dir)/clip-9.mp4"])
        #expect(deleted == (0..<6).map { "\(dir)/clip-\($0).mp4" })
        #expect(keeper.usedBytes() <= 450 << 10)
        #expect(FileManager.default.fileExists(atPath: "\(dir)/clip-10.mp4.partial"))  // never the file being written
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/clip-0.mp4.sha256"))   // its checksum went with it
        #expect(FileManager.default.fileExists(atPath: "\(dir)/clip-9.mp4.sha256"))
        // Another keeper of the folder (a second camera's) took the oldest
        // after this one listed it: it counts as freed, and no more goes.
        for i in 0..<6 {
            let path = "\(dir)/clip-\(i).mp4"
            _ = FileManager.default.createFile(atPath: path, contents: Data(count: 100 << 10))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000 + Double(i) * 60)], ofItemAtPath: path)
        }
        let listed = keeper.finished(), used = keeper.usedBytes()
        try FileManager.default.removeItem(atPath: "\(dir)/clip-0.mp4")
        let raced = keeper.enforce(protecting: [], listed: listed, used: used)
        #expect(raced == (1..<6).map { "\(dir)/clip-\($0).mp4" }, "\(raced)")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/clip-6.mp4"))
        // A free-space minimum no disk meets deletes what it may, never the protected.
        let greedy = StorageKeeper(folder: dir, quotaBytes: 0, minFreeBytes: Int.max)
        greedy.enforce(protecting: ["\(dir)/clip-9.mp4"])
        #expect(greedy.finished().map(\.path) == ["\(dir)/clip-9.mp4"])
    }
}

/// `obscura run` on this machine (no camera, no GPIO): it still comes up,
/// tells systemd it is ready, says why it cannot record, and answers on its
/// socket with the truth.
@Suite struct ServiceProcessTests {
    @Test func theServiceNotifiesSystemdAndReportsItsStateOverTheSocket() throws {
        let obscura = packageRoot + "/.build/debug/obscura"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-svc-\(getpid())").path
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = write("""
            board = "usb-uvc"
            [recording]
            folder = "\(dir)/rec"
            min_free_space_mb = 1
            [photo]
            folder = "\(dir)/photos"
            [control]
            socket = "\(dir)/control.sock"
            [live]
            socket = "\(dir)/live.sock"
            """, "svc.toml")
        // A notification socket standing in for systemd's.
        let notify = "\(dir)/notify"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in notify.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0)
        var tv = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))

        // Interrupted recordings from earlier runs: one from before the
        // partial folder existed, one in it (each with frames), one cut
        // before its first frame (no frame in it); and an unfinished photo.
        try FileManager.default.createDirectory(atPath: "\(dir)/rec", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(dir)/incoming", withIntermediateDirectories: true)
        for (name, partial) in [("old.mp4", "\(dir)/rec/old.mp4.partial"), ("cut.mkv", "\(dir)/incoming/cut.mkv.partial")] {
            let made = try runProgram(obscura, ["record", "--camera", "synthetic", "--size", "320x240", "--duration", "0.3",
                                                "--output", "\(dir)/\(name)"])
            try #require(made.status == 0, "\(made.stderr)")
            try FileManager.default.moveItem(atPath: "\(dir)/\(name)", toPath: partial)
            try FileManager.default.removeItem(atPath: "\(dir)/\(name).sha256")
        }
        _ = FileManager.default.createFile(atPath: "\(dir)/incoming/empty.mp4.partial", contents: Data(count: 20))
        _ = FileManager.default.createFile(atPath: "\(dir)/incoming/half.jpg.partial", contents: Data(count: 5))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: obscura)
        process.arguments = ["run", "--config", config]
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify
        env["WATCHDOG_USEC"] = "2000000"
        process.environment = env
        let err = Pipe()
        process.standardError = err
        try process.run()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var messages: [String] = []
        while !messages.contains(where: { $0.contains("WATCHDOG=1") }) {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            messages.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
        #expect(messages.contains { $0.hasPrefix("READY=1\nSTATUS=error: camera: no camera found") }, "\(messages)")
        #expect(messages.contains { $0.contains("WATCHDOG=1") })
        let status = try runProgram(obscura, ["status", "--json", "--socket", "\(dir)/control.sock"])
        let decoded = try JSONDecoder().decode(ServiceStatus.self, from: Data(status.stdout.utf8))
        #expect(decoded.state == "error" && decoded.camera == nil && decoded.file == nil)
        #expect(decoded.board == "USB (UVC) camera box")
        #expect(decoded.lastError?.contains("no camera found") == true)
        let record = try runProgram(obscura, ["ctl", "--socket", "\(dir)/control.sock", "record", "start"])
        #expect(record.status != 0 && record.stdout.contains("cannot record: no camera"))
        let flash = try runProgram(obscura, ["ctl", "--socket", "\(dir)/control.sock", "flash", "off"])
        #expect(flash.status == 0)
        #expect(try runProgram(obscura, ["status", "--socket", "\(dir)/control.sock"]).stdout.contains("flash: off"))
        #expect(FileManager.default.fileExists(atPath: "\(dir)/rec/old.mp4"))  // recovered
        #expect(FileManager.default.fileExists(atPath: "\(dir)/rec/cut.mkv"))
        let sums = try runProgram("/usr/bin/sha256sum", ["-c", "old.mp4.sha256", "cut.mkv.sha256"], cwd: "\(dir)/rec")
        #expect(sums.status == 0 && sums.stdout == "old.mp4: OK\ncut.mkv: OK\n", "\(sums.stdout)\(sums.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/incoming").isEmpty)  // the half photo and the empty recording dropped
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/rec/empty.mp4"))
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("the board profile wires no GPIO"))
        #expect(log.contains("recovered an interrupted recording: \(dir)/rec/old.mp4, "), "\(log)")
        #expect(log.contains("removed \(dir)/incoming/empty.mp4.partial: an interrupted recording with no frame in it"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/control.sock"))
    }

    /// The configured frame rate reaches the camera. With the test-pattern
    /// camera (1–60 fps) 15 records at 15 fps, and 120 — beyond it — records
    /// at 60, said in the journal; the file has its checksum.
    @Test(arguments: [(15.0, 15.0), (120.0, 60.0)])
    func theConfiguredFrameRateIsTheCamerasRate(asked: Double, expected: Double) throws {
        let obscura = packageRoot + "/.build/debug/obscura"
        let dir = try TemporaryDirectory()
        let service = try PatternService(in: dir.path, recording: "frame_rate = \(asked)")
        let process = service.process, err = service.standardError
        defer { if process.isRunning { process.terminate() } }
        let socket = "\(dir.path)/control.sock"
        _ = waitUntilBlocking { FileManager.default.fileExists(atPath: socket) }
        let start = try runProgram(obscura, ["ctl", "--socket", socket, "record", "start"])
        #expect(start.status == 0, "\(start.stdout)\(start.stderr)")
        // Three seconds of the camera's frames, by the recording's own count.
        _ = try waitUntilBlocking(within: .seconds(60), every: .milliseconds(100)) {
            try JSONDecoder().decode(ServiceStatus.self, from: Data(try ControlClient.send("status", to: socket).utf8)).frames >= Int(expected * 3)
        }
        let stop = try runProgram(obscura, ["ctl", "--socket", socket, "record", "stop"])
        #expect(stop.status == 0, "\(stop.stdout)\(stop.stderr)")
        var files: [String] = []
        _ = waitUntilBlocking(every: .milliseconds(100)) {
            files = ((try? FileManager.default.contentsOfDirectory(atPath: "\(dir.path)/rec")) ?? []).sorted()
            return files.contains { $0.hasSuffix(".sha256") }
        }
        process.terminate()
        process.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let movie = try #require(files.first { $0.hasSuffix(".mp4") }, "\(files) \(log)")
        let probe = try ProbedVideo.read("\(dir.path)/rec/\(movie)")
        // The camera's rate, by the interval most frames came at (a loaded
        // machine's camera may skip a frame, or the recorder drop one: the
        // summary says which).
        let interval = try #require(probe.medianFrameInterval, "\(probe.frameCount) frames")
        let summary = log.split(separator: "\n").last { $0.contains("recording finished") } ?? "no summary in \(log)"
        #expect(abs(1 / interval - expected) < expected * 0.03,
                "frames every \(interval * 1000) ms; \(probe.frameCount) frames over \(probe.measuredFrameRate) fps: \(summary)")
        let sums = try runProgram("/usr/bin/sha256sum", ["-c", movie + ".sha256"], cwd: "\(dir.path)/rec")
        #expect(sums.status == 0, "\(sums.stdout)\(sums.stderr)")
        if asked != expected {
            #expect(log.contains("frame_rate 120 is outside what camera synthetic:0 allows at this format (1–60 fps); recording at 60 fps"), "\(log)")
        }
    }

    @Test func theUnitIsSandboxedToAnExposureOfThreeOrLess() throws {
        let result = try runProgram("systemd-analyze", ["security", "--offline=true", packageRoot + "/deploy/obscura.service"])
        let line = try #require((result.stdout + result.stderr).split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first)
        #expect(score <= 3.0, "\(line)")
    }

    @Test func theDebianPackageHoldsTheServiceAndDependsOnTheLibrariesItLinks() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-deb-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let built = try runProgram(packageRoot + "/deploy/build-deb", ["--binary", packageRoot + "/.build/debug/obscura",
                                                                     "--version", "1.2.3", "--out", out,
                                                                     "--maintainer", "Obscura test <test@obscura.test>"])
        #expect(built.status == 0, "\(built.stderr)")
        // A shim for the libcamera installed here too, from its own headers (on a Pi: Raspberry Pi OS's).
        let system = try runProgram("pkg-config", ["--modversion", "libcamera"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(built.stderr.contains("(system (\(system)))"), "\(built.stderr)")
        let deb = built.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(deb.hasSuffix("obscura_1.2.3_amd64.deb"))
        let depends = try runProgram("dpkg-deb", ["-f", deb, "Depends"]).stdout
        for package in ["libcamera", "libgpiod", "libavcodec", "libavformat", "libswscale", "libcamera-ipa"] {
            #expect(depends.contains(package), "Depends: \(depends)")
        }
        #expect(!depends.contains("libx264"))  // only what the binary links itself
        let contents = try runProgram("dpkg-deb", ["-c", deb]).stdout
        for path in ["./usr/bin/obscura", "./lib/systemd/system/obscura.service", "./usr/lib/sysusers.d/obscura.conf",
                     "./lib/udev/rules.d/60-obscura-gpio.rules", "./etc/obscura/obscura.toml",
                     "./usr/share/obscura/profiles/pi4b.toml", "./usr/share/obscura/profiles/virtual.toml",
                     "./etc/ssh/sshd_config.d/obscura-fetch.conf", "./lib/systemd/system/srv-obscura-recordings.mount",
                     "./lib/systemd/system/obscura-collect.service", "./lib/systemd/system/obscura-collect.timer",
                     "./usr/share/doc/obscura/examples/fleet.toml", "./usr/share/doc/obscura/docs/service.md",
                     "./usr/share/doc/obscura/docs/configuration.md", "./usr/share/man/man1/obscura.1.gz",
                     "./usr/share/man/man1/obscura-record.1.gz", "./usr/share/man/man5/obscura.toml.5.gz",
                     "./usr/share/bash-completion/completions/obscura", "./usr/share/zsh/vendor-completions/_obscura",
                     "./usr/share/fish/vendor_completions.d/obscura.fish"] {
            #expect(contents.contains(path), "\(path) missing")
        }
        let control = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-deb-control-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: control) }
        #expect(try runProgram("dpkg-deb", ["-e", deb, control]).status == 0)
        #expect(try String(contentsOfFile: control + "/conffiles", encoding: .utf8)
                == "/etc/obscura/obscura.toml\n/etc/ssh/sshd_config.d/obscura-fetch.conf\n/etc/ssh/sshd_config.d/obscura-view.conf\n")
        let postinst = try String(contentsOfFile: control + "/postinst", encoding: .utf8)
        #expect(postinst.contains("systemd-sysusers"))
        // The retrieval account's folders in /srv are made on the kiosk, not shipped (Debian's policy).
        #expect(postinst.contains("/srv/obscura/recordings") && !contents.contains("./srv/"), "\(contents)")
        // Units are enabled, started and stopped through init-system-helpers,
        // as debhelper's are: no line calls systemctl but to reload or ask
        // (lintian's maintainer-script-calls-systemctl, by its own pattern).
        #expect(postinst.contains("deb-systemd-helper enable") && postinst.contains("deb-systemd-invoke restart obscura.service"))
        for script in ["postinst", "prerm", "postrm"] {
            let text = try String(contentsOfFile: control + "/" + script, encoding: .utf8)
            let direct = text.split(separator: "\n").filter {
                !$0.hasPrefix("#") && $0.range(of: #"^(?:.+;)?\s*systemctl\b"#, options: .regularExpression) != nil && !$0.contains("daemon-reload")
            }
            #expect(direct.isEmpty, "\(script) calls systemctl: \(direct)")
        }
        #expect(try runProgram("dpkg-deb", ["-f", deb, "Maintainer"]).stdout == "Obscura test <test@obscura.test>\n")
        #expect(contents.contains("./usr/share/doc/obscura/changelog.gz") && contents.contains("./usr/share/doc/obscura/copyright"))
    }
}

/// Names of this process's threads (/proc/self/task/*/comm).
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

@Suite struct ThreadOwnershipTests {
    /// The server's thread holds the socket, not the server: its last
    /// reference going ends it — thread joined, socket removed — with no
    /// close() needed, and while `accept` would have been blocked.
    @Test func theControlServerGoesWithItsLastReferenceAndJoinsItsThread() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-control-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/control.sock"
        // Its threads under names of its own: services that other suites
        // run in this process meanwhile have theirs.
        let names = (server: "owned-control", replies: "owned-reply")
        let before = threadNames().filter { $0 == names.server }.count
        let repliesBefore = threadNames().filter { $0 == names.replies }.count
        var server: ControlServer? = try ControlServer(path: path, threads: names) { "echo \($0)" }
        #expect(try ControlClient.send("ping", to: path) == "echo ping")
        #expect(threadNames().filter { $0 == names.server }.count == before + 1)
        weak var released: ControlServer?
        released = server
        server = nil
        #expect(released == nil, "the server's thread kept it alive")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(threadNames().filter { $0 == names.server }.count == before, "its thread was not joined")
        #expect(threadNames().filter { $0 == names.replies }.count == repliesBefore, "its reply thread was not joined")
        #expect(throws: SystemError.self) { try ControlClient.send("ping", to: path) }
    }

    /// A thread blocked in poll is woken at once and joined; one that
    /// outlives its owner's last reference on itself detaches instead.
    @Test func aWakeupEndsABlockedWaitAndTheThreadIsJoined() throws {
        let wakeup = try Wakeup()
        let woke = Mutex(false)
        let thread = try JoinableThread(name: "obscura-test") {
            _ = try? wakeup.wait(for: nil, timeout: nil)
            woke.withLock { $0 = wakeup.isSignalled }
        }
        #expect(threadNames().contains("obscura-test"))
        wakeup.signal()
        thread.join()
        #expect(woke.withLock { $0 })
        #expect(!threadNames().contains("obscura-test"))
        thread.join()  // once only; later calls return
    }
}

@Suite struct JournalLogTests {
    /// In the journal each line carries its syslog priority (journald files
    /// the entry under it and strips it); on a terminal the line is as before.
    @Test func linesCarryTheirPriorityToTheJournalOnly() {
        let lines = Mutex<[String]>([])
        let capture: @Sendable (String) -> Void = { line in lines.withLock { $0.append(line) } }
        var journal = Logger(label: "test") { _ in JournalLogHandler(toJournal: true, write: capture) }
        journal.logLevel = .debug
        journal.error("cannot write /srv/a.mp4: No space left on device")
        journal.warning("button record unavailable")
        journal.notice("ready")
        journal.info("camera vimc: NV12 640x480")
        journal.debug("frame 12")
        let terminal = Logger(label: "test") { _ in JournalLogHandler(toJournal: false, write: capture) }
        terminal.notice("recording /srv/b.mp4\nsecond line")
        terminal.debug("not shown at the default level")
        #expect(lines.withLock { $0 } == [
            "<3>obscura: cannot write /srv/a.mp4: No space left on device\n",
            "<4>obscura: button record unavailable\n",
            "<5>obscura: ready\n",
            "<6>obscura: camera vimc: NV12 640x480\n",
            "<7>obscura: frame 12\n",
            "obscura: recording /srv/b.mp4 second line\n",
        ])
        // Outside systemd there is no journal stream.
        #expect(ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil || !JournalLogHandler.standardErrorIsJournal())
    }
}
