import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

/// Kills `obscura record --recipient` with SIGKILL at 50 random instants per
/// container (`OBSCURA_KILL_TRIALS` for more), two recordings at a time, and
/// decrypts what each kill left, as it was left (`x.mp4.age.partial`):
/// - `obscura decrypt` cuts it back to its last whole fragment or cluster;
///   FFmpeg decodes that with not one error, GStreamer decodes the same
///   frames, and the frames are consecutive (no gap in their times);
/// - Debian's `age -d` gives the same bytes and then the torn fragment's,
///   and fails at the missing end;
/// - what was lost is at most one second and one chunk's duration before the
///   last frame count the recorder reported (its progress, every half second);
/// - most kills leave something that plays (one with nothing decryptable
///   was killed before its first fragment and a chunk after it were sealed).
@Suite(.serialized) struct EncryptedKillTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    static let trials = ProcessInfo.processInfo.environment["OBSCURA_KILL_TRIALS"].flatMap { Int($0) }.map { max($0, 2) } ?? 50

    struct Trial: Sendable {
        var delay = 0.0
        var reported = 0
        var fps = 30.0
        var encryptedBytes = 0
        var decrypt = ""
        var decryptStatus: Int32 = -1
        var ffmpegFrames: Int?
        var ffmpegSaid = ""
        var gstreamerFrames: Int?
        var gstreamerStatus: Int32 = 0
        var ageStatus: Int32 = 0
        var ageGivesOursFirst = false
        var largestGap = 0.0
        var plainBytes = 0
    }

    /// The largest distance between consecutive frames' times, in frame
    /// intervals (1: none missing).
    static func largestGap(_ file: String) -> (gap: Double, interval: Double) {
        guard let r = try? runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                                  "-of", "csv=p=0", file]) else { return (.infinity, 0) }
        let times = r.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        guard times.count >= 3 else { return (1, 0) }
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        let interval = steps[steps.count / 2]
        return ((steps.last ?? 0) / interval, interval)
    }

    func trial(_ n: Int, container: String, recipient: String, in dir: String) -> Trial {
        var t = Trial()
        t.delay = 0.3 + Double.random(in: 0..<3.7)
        let file = "\(dir)/k\(n).\(container).age"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: obscura)
        process.arguments = ["record", "--camera", "synthetic", "--size", "1280x720", "--duration", "60",
                             "--recipient", recipient, "--output", file]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch { t.decrypt = "did not start: \(error)"; return t }
        usleep(useconds_t(t.delay * 1e6))
        kill(process.processIdentifier, SIGKILL)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // The last progress line: "recording 2.1 s, 63 frames, 1234 KiB, 30.0 fps, …"
        if let line = log.split(separator: "\n").last(where: { $0.contains("obscura: recording ") }) {
            let words = line.split(separator: " ")
            if let i = words.firstIndex(where: { $0.hasPrefix("frames") }), i > 0 { t.reported = Int(words[i - 1]) ?? 0 }
            if let i = words.firstIndex(where: { $0.hasPrefix("fps") }), i > 0 { t.fps = Double(words[i - 1]) ?? 30 }
        }
        let partial = file + ".partial"
        t.encryptedBytes = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
        guard t.encryptedBytes > 0 else { return t }
        let decrypted = try? runProgram(obscura, ["decrypt", "--identity-file", "\(dir)/key.txt", partial])
        t.decrypt = (decrypted?.stdout ?? "") + (decrypted?.stderr ?? "")
        t.decryptStatus = decrypted?.status ?? -1
        let plain = "\(dir)/k\(n).\(container).partial"
        let byAge = "\(dir)/k\(n).by-age.\(container)"
        let age = try? runProgram("sh", ["-c", "age -d -i '\(dir)/key.txt' '\(partial)' > '\(byAge)'"])
        t.ageStatus = age?.status ?? -1
        if let ours = FileManager.default.contents(atPath: plain), let theirs = FileManager.default.contents(atPath: byAge) {
            t.plainBytes = ours.count
            t.ageGivesOursFirst = theirs.count >= ours.count && theirs.prefix(ours.count) == ours
            if t.decrypt.contains(" whole") {
                (t.ffmpegFrames, t.ffmpegSaid) = CrashSafetyTests.ffmpegFrames(plain)
                let clean = try? runProgram("ffmpeg", ["-v", "error", "-i", plain, "-f", "null", "-"])
                t.ffmpegSaid += clean.map { $0.status == 0 ? $0.stderr : "exit \($0.status): \($0.stderr)" } ?? "ffmpeg did not run"
                (t.gstreamerFrames, t.gstreamerStatus) = CrashSafetyTests.gstreamerFrames(plain, container: container)
                t.largestGap = Self.largestGap(plain).gap
            }
        }
        for f in [partial, plain, byAge] { try? FileManager.default.removeItem(atPath: f) }
        return t
    }

    @Test(arguments: ["mp4", "mov", "mkv"])
    func anEncryptedRecordingKilledAtAnyInstantDecryptsToAFileThatPlaysClean(container: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-kill-age-\(container)-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try runProgram("age-keygen", ["-o", dir + "/key.txt"])
        try #require(made.status == 0, "age-keygen: \(made.stderr)")
        let recipient = try #require(made.stderr.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let results = Mutex<[Int: Trial]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for n in stride(from: worker, to: Self.trials, by: 2) {
                let t = trial(n, container: container, recipient: recipient, in: dir)
                results.withLock { $0[n] = t }
            }
        }
        let all = results.withLock { $0 }
        var played = 0, early = 0, cut = 0
        for n in 0..<Self.trials {
            let t = try #require(all[n])
            let what = "\(container) #\(n), killed after \(String(format: "%.2f", t.delay)) s, \(t.reported) frames reported, "
                + "\(t.encryptedBytes) bytes encrypted: \(t.decrypt)"
            guard t.encryptedBytes > 0 else { early += 1; continue }
            #expect(t.decryptStatus == 0, "\(what)")
            #expect(t.ageStatus != 0 && t.ageGivesOursFirst, "\(what): age -d exit \(t.ageStatus), its bytes begin with ours: \(t.ageGivesOursFirst)")
            guard let frames = t.ffmpegFrames, frames > 0 else {
                // Nothing to play: killed before one fragment and one chunk were sealed.
                early += 1
                continue
            }
            played += 1
            if t.decrypt.contains("leaving out") { cut += 1 }
            #expect(t.ffmpegSaid.isEmpty, "\(what): FFmpeg said: \(t.ffmpegSaid)")
            #expect(t.gstreamerStatus == 0 && t.gstreamerFrames == frames,
                    "\(what): FFmpeg decodes \(frames) frames, GStreamer \(t.gstreamerFrames ?? -1) (exit \(t.gstreamerStatus))")
            #expect(t.largestGap < 1.5, "\(what): a gap of \(t.largestGap) frame intervals")
            // One second and one chunk's duration (at the file's own rate of bytes per frame).
            let bytesPerFrame = Double(t.plainBytes) / Double(frames)
            let allowed = t.fps * 1.0 + 65_536 / bytesPerFrame + 1
            #expect(Double(frames) >= Double(t.reported) - allowed,
                    "\(what): \(frames) frames decrypted, \(t.reported) reported, \(String(format: "%.0f", allowed)) may be lost")
        }
        print("EncryptedKillTests \(container): \(played) played clean (\(cut) cut back to a whole fragment), \(early) killed before anything was decryptable")
        #expect(played >= Self.trials / 2, "most kills come after the first fragment")
    }
}
