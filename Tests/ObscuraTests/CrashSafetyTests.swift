import Dispatch
import Foundation
import ObscuraSystem
import Testing
import TestSupport

/// Kills `obscura record` with SIGKILL at 40 instants per container (or
/// `OBSCURA_KILL_TRIALS`: 100 or more for a long look), spread
/// over its start and three seconds more (from before the camera has started
/// to well into the recording; the start is measured on this machine in the
/// same run, so a slow one is killed as late), two recordings at a time. What a kill leaves is read
/// by two independent demuxers, FFmpeg's (ffprobe, decoding every frame) and
/// GStreamer's (qtdemux or matroskademux, decoded by avdec_h264):
/// - nothing at all; or
/// - a `.partial` that both read, with the same frames, missing at most the
///   last second the recording reported; or
/// - a `.partial` with no frame in it, which the next `record` to that name
///   removes, saying so.
/// A killed recording never has its final name.
@Suite(.serialized) struct CrashSafetyTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    static let trials = ProcessInfo.processInfo.environment["OBSCURA_KILL_TRIALS"].flatMap { Int($0) }.map { max($0, 2) } ?? 40

    struct Trial: Sendable {
        var delay = 0.0
        var reported = 0
        var left = "nothing"
        var ffmpegFrames: Int?
        var ffmpegSaid = ""
        var gstreamerFrames: Int?
        var gstreamerStatus: Int32 = 0
        var finalNameExists = false
        var cleanup = ""
    }

    /// Frames FFmpeg decodes in `file` (nil: it could not read it) and what it said.
    static func ffmpegFrames(_ file: String) -> (Int?, String) {
        guard let r = try? runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames",
                                                  "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file]) else { return (nil, "") }
        return (r.status == 0 ? Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) : nil, r.stderr)
    }

    /// Frames GStreamer's demuxer hands its decoder, decoded, and its exit
    /// status. gst-launch 1.22 was seen to hang for good on a MOV holding
    /// only its header (in a chroot; it exits at once elsewhere): it is given
    /// two minutes, then killed (status 137), which fails the trial.
    static func gstreamerFrames(_ file: String, container: String) -> (Int?, Int32) {
        let demuxer = container == "mkv" ? "matroskademux" : "qtdemux"
        guard let r = try? runProgram("timeout", ["-s", "KILL", "120", "gst-launch-1.0", "-v", "filesrc", "location=\(file)", "!", demuxer, "name=d",
                                                  "d.video_0", "!", "avdec_h264", "!", "fakesink", "silent=false"]) else { return (nil, -1) }
        return (r.stdout.components(separatedBy: "last-message = chain").count - 1, r.status)
    }

    /// `program ARGUMENTS`, not yet started, its standard error to the pipe.
    static func withStandardError(_ program: String, _ arguments: [String]) -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        return (process, err)
    }

    /// Seconds from starting `program ARGUMENTS` (a recording) to its saying
    /// its file opened, on this machine as it is now; 0 when it never says so.
    static func startup(_ program: String, _ arguments: [String]) -> Double {
        let (process, err) = withStandardError(program, arguments)
        let clock = ContinuousClock(), start = clock.now
        guard (try? process.run()) != nil else { return 0 }
        var said = ""
        // (What the pipe has, as it comes: a read of a count waits for all of it.)
        while !said.contains("file opened") {
            let data = err.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            said += String(decoding: data, as: UTF8.self)
        }
        let took = clock.now - start
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        guard said.contains("file opened") else { return 0 }
        return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
    }

    /// `program ARGUMENTS` started and killed with SIGKILL after `delay`
    /// seconds: what it wrote to standard error, or why it did not start.
    static func killed(_ program: String, _ arguments: [String], after delay: Double) -> Result<String, any Error> {
        let (process, err) = withStandardError(program, arguments)
        do { try process.run() } catch { return .failure(error) }
        usleep(useconds_t(delay * 1e6))
        kill(process.processIdentifier, SIGKILL)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return .success(log)
    }

    func trial(_ n: Int, container: String, in dir: String, span: Double) -> Trial {
        var t = Trial()
        // Spread evenly over the span, each instant jittered within its slot.
        t.delay = (Double(n) + Double.random(in: 0..<1)) * span / Double(Self.trials)
        let file = "\(dir)/kill-\(n).\(container)"
        let run = Self.killed(obscura, ["record", "--camera", "synthetic", "--size", "640x480", "--duration", "60", "--output", file],
                              after: t.delay)
        guard case .success(let log) = run else { t.left = "did not start: \(run)"; return t }
        // The last progress line before the kill: "recording 2.1 s, 63 frames, …"
        t.reported = log.split(separator: "\n").compactMap { line -> Int? in
            guard line.contains("obscura: recording ") else { return nil }
            let words = line.split(separator: " ")
            guard let i = words.firstIndex(where: { $0.hasPrefix("frames") }), i > 0 else { return nil }
            return Int(words[i - 1])
        }.last ?? 0
        t.finalNameExists = FileManager.default.fileExists(atPath: file)
        let partial = file + ".partial"
        guard FileManager.default.fileExists(atPath: partial) else { return t }
        t.left = "partial"
        (t.ffmpegFrames, t.ffmpegSaid) = Self.ffmpegFrames(partial)
        // The second demuxer checks every file with frames; one with none is
        // checked for being removed.
        if (t.ffmpegFrames ?? 0) > 0 {
            (t.gstreamerFrames, t.gstreamerStatus) = Self.gstreamerFrames(partial, container: container)
        }
        if (t.ffmpegFrames ?? 0) == 0 {
            // No frame: the next recording to that name removes it and says so.
            let again = try? runProgram(obscura, ["record", "--camera", "synthetic", "--duration", "0.1", "--output", file])
            t.cleanup = again?.stderr ?? ""
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: file + ".sha256")
        }
        try? FileManager.default.removeItem(atPath: partial)
        return t
    }

    @Test(arguments: ["mp4", "mov", "mkv"])
    func aRecordingKilledAtAnyInstantLeavesAPlayableFileOrNothing(container: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-kill-\(container)-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let started = Self.startup(obscura, ["record", "--camera", "synthetic", "--size", "640x480", "--duration", "60",
                                             "--output", "\(dir)/start.\(container)"])
        let span = started + 3
        let results = Mutex<[Int: Trial]>([:])
        // Two at a time, on threads of their own (each waits on its process).
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for n in stride(from: worker, to: Self.trials, by: 2) {
                let t = trial(n, container: container, in: dir, span: span)
                results.withLock { $0[n] = t }
            }
        }
        let all = results.withLock { $0 }
        var played = 0, empty = 0, nothing = 0
        for n in 0..<Self.trials {
            let t = try #require(all[n])
            let what = "\(container) #\(n), killed after \(String(format: "%.2f", t.delay)) s, \(t.reported) frames reported"
            #expect(!t.finalNameExists, "a killed recording must not look finished: \(what)")
            switch t.left {
            case "nothing": nothing += 1
            case "partial":
                if let frames = t.ffmpegFrames, frames > 0 {
                    played += 1
                    #expect(t.gstreamerStatus == 0 && t.gstreamerFrames == frames,
                            "\(what): FFmpeg decodes \(frames) frames, GStreamer \(t.gstreamerFrames ?? -1) (exit \(t.gstreamerStatus)); FFmpeg said: \(t.ffmpegSaid)")
                    #expect(frames >= t.reported - 31, "\(what): \(frames) in the file")
                } else {
                    empty += 1
                    #expect(t.cleanup.contains("removed \(dir)/kill-\(n).\(container).partial"), "\(what): a file with no frame: \(t.cleanup)")
                }
            default: Issue.record("\(what): \(t.left)")
            }
        }
        print("\(container): \(played) played, \(empty) held no frame (removed by the next recording), \(nothing) left nothing; "
              + "killed over \(String(format: "%.2f", span)) s (the file opened \(String(format: "%.2f", started)) s after the start)")
        // Three seconds of the span come after the file opened (as measured
        // once): most of those kills find a frame in it.
        #expect(Double(played) >= Double(Self.trials) * 3 / span / 2, "most kills after the file opened find a frame in it")
    }

    /// An encrypted recording killed mid-way: its `.partial` holds only
    /// sealed chunks (no plaintext: it begins as an age file and holds no
    /// MP4 box name); `obscura decrypt` takes it as it is, gives its complete
    /// chunks cut back to the last whole fragment (and the whole frames of
    /// the torn one after it), says so, and FFmpeg decodes that without an
    /// error; `age -d` gives the same whole fragments and the torn
    /// fragment's bytes after them, and fails at the missing end.
    @Test func anEncryptedRecordingKilledMidwayDecryptsUpToItsLastFragment() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-kill-age-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try runProgram("age-keygen", ["-o", dir + "/key.txt"])
        try #require(made.status == 0, "age-keygen: \(made.stderr)")
        let recipient = try #require(made.stderr.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let file = dir + "/k.mp4.age"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: obscura)
        process.arguments = ["record", "--camera", "synthetic", "--size", "640x480", "--duration", "60",
                             "--recipient", recipient, "--output", file]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Killed once the file holds a few sealed chunks (several fragments).
        let partial = file + ".partial"
        var size = 0
        _ = waitUntilBlocking(every: .milliseconds(50)) {
            size = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
            return size >= 6 * 65_552
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try #require(size >= 6 * 65_552, "the encrypted file did not grow: \(size) bytes")
        #expect(!FileManager.default.fileExists(atPath: file))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: partial)))
        #expect(bytes.starts(with: Array("age-encryption.org/v1\n".utf8)))
        for box in ["ftypiso", "moov", "moof", "mdat", "avc1"] {
            #expect(!bytes.contains(Array(box.utf8)), "\(box) in the encrypted file")
        }

        // Decrypted as the kill left it: `k.mp4.age.partial` gives `k.mp4.partial`,
        // cut back to its last whole fragment, which FFmpeg decodes without one error.
        let decrypted = try runProgram(obscura, ["decrypt", "--identity-file", dir + "/key.txt", partial])
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        #expect(decrypted.stdout.contains("the recording was interrupted"), "\(decrypted.stdout)")
        #expect(decrypted.stdout.contains("cut back to its last whole fragment"), "\(decrypted.stdout)")
        let plain = dir + "/k.mp4.partial"
        let (frames, said) = Self.ffmpegFrames(plain)
        #expect((frames ?? 0) >= 15 && said.isEmpty, "ffprobe: \(frames ?? -1) frames; \(said)")
        let clean = try ffmpegDecodeErrors(plain)
        #expect(clean.status == 0 && clean.stderr.isEmpty, "ffmpeg: \(clean.stderr)")

        // age itself gives the complete chunks uncut (the same bytes, then
        // the torn fragment's), then says the end is missing.
        try FileManager.default.moveItem(atPath: partial, toPath: file)
        let byAge = try runProgram("sh", ["-c", "age -d -i '\(dir)/key.txt' '\(file)' > '\(dir)/by-age.mp4'"])
        #expect(byAge.status != 0)
        let ours = try Data(contentsOf: URL(fileURLWithPath: plain))
        let theirs = try Data(contentsOf: URL(fileURLWithPath: dir + "/by-age.mp4"))
        #expect(EncryptedKillTests.beginsWithTheSameWholeFragments(theirs: theirs, ours: ours, container: "mp4"),
                "age gave \(theirs.count) bytes, obscura \(ours.count): not the same whole fragments")
        try FileManager.default.removeItem(atPath: plain)

        // A wrong identity: said, and no plaintext written.
        _ = try runProgram("age-keygen", ["-o", dir + "/other.txt"])
        let wrong = try runProgram(obscura, ["decrypt", "--identity-file", dir + "/other.txt", file])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("no identity matches"), "\(wrong.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains("k.mp4") && !$0.hasSuffix(".age") }
        #expect(left.isEmpty, "plaintext left: \(left)")
    }
}
