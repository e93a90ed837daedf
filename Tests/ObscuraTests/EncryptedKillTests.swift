import Dispatch
import Foundation
import ObscuraAge
import ObscuraMuxing
import ObscuraSystem
import Testing
import TestSupport

/// Kills `obscura record --recipient` with SIGKILL at 20 random instants per
/// container (`OBSCURA_KILL_TRIALS` for more: `Tests/run --full` kills 100
/// times), two recordings at a time, and
/// decrypts what each kill left, as it was left (`x.mp4.age.partial`). Every
/// other trial aligns fragments to age's chunks (`--align-to-age-chunks`);
/// every fifth records in one-second segments.
/// - `obscura decrypt` cuts it back to its last whole fragment or cluster;
///   FFmpeg decodes that with not one error, GStreamer decodes the same
///   frames;
/// - the frames are the recorder's, in order, none missing: each one's time
///   is the time the recorder stored for it (`--timestamps`), frame after
///   frame, across the segments too (a frame the camera itself skipped under
///   load is missing from both, and is no gap);
/// - Debian's `age -d` fails at the missing end; its bytes begin with ours,
///   and aligned, they are ours exactly (whole fragments), which FFmpeg and
///   GStreamer decode with no error, unless the kill cut the one write of a
///   fragment's chunks itself (the kernel stops a write part-way for SIGKILL:
///   the file then ends inside a sealed chunk, and age -d's output ends
///   inside that fragment; `obscura decrypt` still cuts it back);
/// - an early kill keeps what it had: once the recorder has reported a
///   frame, or the file holds one sealed chunk, something decrypts and plays
///   (the first fragment is sealed at once);
/// - what was lost since the last frame count the recorder reported (its
///   progress, every half second) is at most what it promises: the fragment
///   being built (half a second of frames, one frame more; aligned, twice
///   that) and, not aligned, the whole fragment before it, whose bytes may
///   wait in the chunk not yet sealed. The pattern's quiet stretches make
///   frames of under a kilobyte, 64 KiB of which last seconds: the chunk is
///   then filled and sealed at the next fragment's end, not left waiting.
@Suite(.serialized) struct EncryptedKillTests {
    let obscura = packageRoot + "/.build/debug/obscura"
    /// `obscura record`'s fragment length (its default).
    static let fragmentSeconds = 0.5
    static let trials = ProcessInfo.processInfo.environment["OBSCURA_KILL_TRIALS"].flatMap { Int($0) }.map { max($0, 5) } ?? 20

    struct Trial: Sendable {
        var aligned = false
        var segmented = false
        var delay = 0.0
        var reported = 0
        var fps = 30.0
        var encryptedBytes = 0
        var decrypt = ""
        var decryptStatus: Int32 = -1
        var frames = 0
        var faults: [String] = []
        var ageStatus: Int32 = 0
        var ageGivesOursFirst = false
        var ageGivesOurs = false
        var plainBytes = 0
        /// The interrupted file's video packets' sizes, in order.
        var packetSizes: [Int] = []
        /// The kill cut a write itself: the file ends inside a sealed chunk.
        var tornWrite = false
        /// What the recorder said besides its progress (the encoder and its
        /// changes, the file's opening), and the frames the --timestamps
        /// file had when it was killed: what a failure is read with.
        var said: [String] = []
        var stamped = 0

        var what: String {
            "killed after \(String(format: "%.2f", delay)) s\(aligned ? ", aligned" : "")\(segmented ? ", in segments" : ""), "
                + "\(reported) frames reported, \(encryptedBytes) bytes encrypted: \(decrypt)"
        }
    }

    /// The frames' times in `file`, in seconds from its first.
    static func frameTimes(_ file: String) -> [Double] {
        guard let r = try? runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                                  "-of", "csv=p=0", file]) else { return [] }
        let times = r.stdout.split(separator: "\n").compactMap { Double($0.split(separator: ",").first ?? "") }
        return times.map { $0 - (times.first ?? 0) }
    }

    /// What is wrong with a decrypted file: FFmpeg's errors, GStreamer's
    /// frames against FFmpeg's. Its frame count (FFmpeg's).
    static func decodeFaults(_ file: String, container: String) -> (frames: Int, faults: [String]) {
        var faults: [String] = []
        let (counted, said) = CrashSafetyTests.ffmpegFrames(file)
        let frames = counted ?? 0
        guard frames > 0 else { return (0, faults) }
        if !said.isEmpty { faults.append("ffprobe said: \(said)") }
        if let clean = try? ffmpegDecodeErrors(file) {
            if clean.status != 0 || !clean.stderr.isEmpty { faults.append("FFmpeg said (exit \(clean.status)): \(clean.stderr)") }
        } else {
            faults.append("ffmpeg did not run")
        }
        let (gstreamer, status) = CrashSafetyTests.gstreamerFrames(file, container: container)
        if status != 0 || gstreamer != frames { faults.append("FFmpeg decodes \(frames) frames, GStreamer \(gstreamer ?? -1) (exit \(status))") }
        return (frames, faults)
    }

    func trial(_ n: Int, container: String, recipient: String, in dir: String, started: Double) -> Trial {
        var t = Trial()
        t.aligned = n % 2 == 1
        t.segmented = n % 5 == 4
        t.delay = 0.2 + Double.random(in: 0..<(2.8 + started))
        let name = "k\(n)"
        let file = "\(dir)/\(name).\(container).age"
        let stamps = "\(dir)/\(name).txt"
        let arguments = ["record", "--camera", "synthetic", "--size", "1280x720", "--duration", "60", "--recipient", recipient,
                         "--timestamps", stamps, "--output", file]
            + (t.aligned ? ["--align-to-age-chunks"] : []) + (t.segmented ? ["--segment", "1"] : [])
        let run = CrashSafetyTests.killed(obscura, arguments, after: t.delay)
        guard case .success(let log) = run else { t.decrypt = "did not start: \(run)"; return t }
        // The last progress line: "recording 2.1 s, 63 frames, 1234 KiB, 30.0 fps, …"
        if let line = log.split(separator: "\n").last(where: { $0.contains("obscura: recording ") }) {
            let words = line.split(separator: " ")
            if let i = words.firstIndex(where: { $0.hasPrefix("frames") }), i > 0 { t.reported = Int(words[i - 1]) ?? 0 }
            if let i = words.firstIndex(where: { $0.hasPrefix("fps") }), i > 0 { t.fps = Double(words[i - 1]) ?? 30 }
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir))?.filter { $0.hasPrefix(name + ".") || $0.hasPrefix(name + "-") }.sorted() ?? []
        defer { for f in files + [name + ".txt"] { try? FileManager.default.removeItem(atPath: dir + "/" + f) } }
        let recorded = ((try? String(contentsOfFile: stamps, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Double($0) }.map { $0 / 1000 }
        t.stamped = recorded.count
        t.said = Array(log.split(separator: "\n").map(String.init).filter { !$0.contains("obscura: recording ") }.suffix(12))
        // Finished segments, then the one the kill interrupted.
        let finished = files.filter { $0.hasSuffix(".age") }
        let partials = files.filter { $0.hasSuffix(".age.partial") }
        // Killed before the recorder had its file (a loaded machine starts
        // it late): nothing was had, so nothing is owed, unless a frame was
        // reported or stored.
        if partials.isEmpty, finished.isEmpty, t.reported == 0, recorded.isEmpty { return t }
        guard partials.count == 1 || (partials.isEmpty && !finished.isEmpty) else {
            t.faults.append("the kill left \(partials) as interrupted files, \(finished) finished (\(t.reported) frames reported, \(recorded.count) stored)")
            return t
        }
        var offset = 0
        for segment in finished {
            let decrypted = try? runProgram(obscura, ["decrypt", "--identity-file", "\(dir)/key.txt", dir + "/" + segment])
            let plain = dir + "/" + String(segment.dropLast(4))
            guard decrypted?.status == 0 else { t.faults.append("\(segment): \(decrypted?.stderr ?? "")"); return t }
            t.faults += Self.sameTimes(Self.frameTimes(plain), recorded, from: offset, in: segment)
            offset += Self.frameTimes(plain).count
            try? FileManager.default.removeItem(atPath: plain)
        }
        t.frames = offset
        // (None: killed between one segment's end and the next one's start.)
        guard let partial = partials.first.map({ dir + "/" + $0 }) else { return t }
        t.encryptedBytes = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
        guard t.encryptedBytes > 0 else { return t }
        if let header = AgeDecryptor.headerLength(of: partial) {
            t.tornWrite = (t.encryptedBytes - header) % Age.sealedChunkSize != 0
        }
        let decrypted = try? runProgram(obscura, ["decrypt", "--identity-file", "\(dir)/key.txt", partial])
        t.decrypt = (decrypted?.stdout ?? "") + (decrypted?.stderr ?? "")
        t.decryptStatus = decrypted?.status ?? -1
        let plain = String(partial.dropLast(".age.partial".count)) + ".partial"
        let byAge = plain + ".by-age"
        let age = try? runProgram("sh", ["-c", "age -d -i '\(dir)/key.txt' '\(partial)' > '\(byAge)'"])
        t.ageStatus = age?.status ?? -1
        defer { for f in [plain, byAge] { try? FileManager.default.removeItem(atPath: f) } }
        guard let ours = FileManager.default.contents(atPath: plain), let theirs = FileManager.default.contents(atPath: byAge) else { return t }
        t.plainBytes = ours.count
        t.packetSizes = Self.packetSizes(plain)
        t.ageGivesOursFirst = Self.beginsWithTheSameWholeFragments(theirs: theirs, ours: ours, container: container)
        t.ageGivesOurs = theirs == ours
        let (frames, faults) = Self.decodeFaults(plain, container: container)
        t.frames = offset + frames
        t.faults += faults
        if frames > 0 { t.faults += Self.sameTimes(Self.frameTimes(plain), recorded, from: offset, in: "the interrupted file") }
        if t.aligned, !t.tornWrite, frames > 0 {
            // What age -d gave, as a player gets it: the same bytes, so the
            // same decode; checked as such all the same.
            try? FileManager.default.moveItem(atPath: byAge, toPath: byAge + "." + container)
            t.faults += Self.decodeFaults(byAge + "." + container, container: container).faults.map { "age -d's output: \($0)" }
            try? FileManager.default.removeItem(atPath: byAge + "." + container)
        }
        return t
    }

    /// Whether what `age -d` gave of an interrupted recording (`theirs`)
    /// and what `obscura decrypt` gave (`ours`) begin with the same whole
    /// fragments: all that age -d gives up to its last whole fragment is
    /// ours byte for byte. (After it, age -d's torn fragment; ours keeps
    /// that fragment's whole frames, rebuilt, or nothing.)
    static func beginsWithTheSameWholeFragments(theirs: Data, ours: Data, container: String) -> Bool {
        let bytes = [UInt8](theirs)
        guard let kind = MovieContainer(pathExtension: container),
              let whole = WholeFragments.extent(of: kind, size: Int64(bytes.count), read: { offset, count in
                  Array(bytes[Int(offset)..<min(bytes.count, Int(offset) + count)])
              }) else { return false }
        let w = Int(whole.wholeBytes)
        return ours.count >= w && theirs.prefix(w) == ours.prefix(w)
    }

    /// The video packets' sizes in `file`, in order.
    static func packetSizes(_ file: String) -> [Int] {
        guard let r = try? runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size",
                                                  "-of", "csv=p=0", file]) else { return [] }
        return r.stdout.split(separator: "\n").compactMap { Int($0.split(separator: ",").first ?? "") }
    }

    /// Faults where the frames of a file do not have the times the recorder
    /// stored for frames `offset`… (relative to the file's first, 1.5 ms).
    /// One exception, MovieWriter's: a frame that starts a fragment and came
    /// sooner after the one before than half the nominal interval (a
    /// starved camera's frames come in bursts) is moved to the end of the
    /// guessed duration of the fragment before: later by at most half the
    /// nominal interval, never earlier, and the frames after it keep their
    /// own times.
    static func sameTimes(_ times: [Double], _ recorded: [Double], from offset: Int, in what: String,
                          nominalInterval: Double = 1.0 / 30) -> [String] {
        guard !times.isEmpty else { return [] }
        guard offset + times.count <= recorded.count else {
            return ["\(what): \(times.count) frames from frame \(offset), but the recorder stored \(recorded.count)"]
        }
        let base = recorded[offset]
        for (i, time) in times.enumerated() {
            let late = time - (recorded[offset + i] - base)
            guard abs(late) > 0.0015 else { continue }
            let gapBefore = i > 0 ? recorded[offset + i] - recorded[offset + i - 1] : .infinity
            if late > 0, late <= nominalInterval / 2 + 0.0015, gapBefore < nominalInterval / 2 { continue }
            return ["\(what): frame \(i) is at \(time) s, the recorder stored frame \(offset + i) at \(recorded[offset + i] - base) s (\(String(format: "%.1f", gapBefore * 1000)) ms after the one before): a frame is missing or out of place"]
        }
        return []
    }

    @Test(arguments: ["mp4", "mov", "mkv"])
    func anEncryptedRecordingKilledAtAnyInstantDecryptsToAFileThatPlaysClean(container: String) throws {
        let scratch = try scratchForBuiltObscura("obscura-kill-age-\(container)")
        let dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let recipient = try makeAgeIdentity(in: dir)
        // When a recording's file opens on this machine now: the kills come
        // from 0.2 s to three seconds after that.
        let started = CrashSafetyTests.startup(obscura, ["record", "--camera", "synthetic", "--size", "1280x720", "--duration", "60",
                                                         "--recipient", recipient, "--output", "\(dir)/start.\(container).age"])
        let results = Mutex<[Int: Trial]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for n in stride(from: worker, to: Self.trials, by: 2) {
                let t = trial(n, container: container, recipient: recipient, in: dir, started: started)
                results.withLock { $0[n] = t }
            }
        }
        let all = results.withLock { $0 }
        var played = [false: 0, true: 0], early = 0, cut = 0, torn = 0
        for n in 0..<Self.trials {
            let t = try #require(all[n])
            let what = "\(container) #\(n), \(t.what)"
            #expect(t.faults.isEmpty, "\(what): \(t.faults.joined(separator: "; "))")
            // One sealed chunk (the header, the first fragment and filler)
            // holds the first frame; a reported frame is in it.
            let sealed = t.encryptedBytes >= 65_536 + 16 + 200
            #expect(t.frames > 0 || (!sealed && t.reported == 0), "\(what): an early kill keeps what it had")
            guard t.encryptedBytes > 0 else {
                if t.frames == 0 { early += 1 }
                continue
            }
            #expect(t.decryptStatus == 0, "\(what)")
            // age -d fails at the missing end, unless the kill came between
            // a segment's last chunk, sealed as the last, and its rename:
            // then the stream is whole, and age -d gives exactly our bytes.
            #expect(t.ageStatus != 0 ? t.ageGivesOursFirst : t.ageGivesOurs,
                    "\(what): age -d exit \(t.ageStatus), its bytes begin with ours: \(t.ageGivesOursFirst), are ours: \(t.ageGivesOurs)")
            if t.tornWrite { torn += 1 }
            if t.aligned, !t.tornWrite { #expect(t.ageGivesOurs, "\(what): aligned, age -d gives whole fragments, as obscura decrypt does") }
            guard t.frames > 0 else { early += 1; continue }
            played[t.aligned, default: 0] += 1
            if t.decrypt.contains("leaving out") { cut += 1 }
            // What the recorder promises (docs/evidence.md), in frames at
            // the camera's 30 fps: the fragment being built (half a second
            // and a frame; aligned, up to twice that) and, not aligned, the
            // whole fragment before it, which may wait in the chunk not yet
            // sealed (never across two fragments, whatever the frames' sizes).
            let fragment = Self.fragmentSeconds * 30 + 1
            let allowed = 2 * fragment
            #expect(Double(t.frames) >= Double(t.reported) - allowed,
                    "\(what): \(t.frames) frames decrypted, \(t.reported) reported, \(t.stamped) in the timestamps file, \(String(format: "%.0f", allowed)) may be lost (its frames' sizes: \(t.packetSizes)); the recorder said: \(t.said.joined(separator: " | "))")
        }
        print("EncryptedKillTests \(container): \(played[false] ?? 0) played clean as usual (\(cut) cut back to a whole fragment), "
              + "\(played[true] ?? 0) aligned (age -d's output clean too), \(early) killed before anything was decryptable, \(torn) killed inside a write")
        // Three seconds of the kills' span come after the file opened (as
        // measured once): most of those kills find a frame in it.
        let after = min(1, 3 / (2.8 + started))
        #expect(Double((played[false] ?? 0) + (played[true] ?? 0)) >= Double(Self.trials) * after * 0.75,
                "most kills come after the first fragment (the file opened \(started) s after the start)")
    }

    /// The bound for an early kill: killed as soon as its first frame is in
    /// the file (the recorder has stored the second frame's time, which it
    /// does after the first frame's write returned), a recording decrypts to
    /// that frame, which plays. Small frames (640x480 at 200 kbit/s), so that
    /// without sealing the first fragment at once nothing would be sealed yet.
    @Test(arguments: ["mp4", "mkv"])
    func aRecordingKilledRightAfterItsFirstFrameKeepsIt(container: String) throws {
        let scratch = try scratchForBuiltObscura("obscura-early-age-\(container)")
        let dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let recipient = try makeAgeIdentity(in: dir)
        let file = "\(dir)/e.\(container).age", stamps = "\(dir)/e.txt"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: obscura)
        process.arguments = ["record", "--camera", "synthetic", "--size", "640x480", "--bit-rate", "200000", "--duration", "60",
                             "--recipient", recipient, "--timestamps", stamps, "--output", file]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Polled, not timed: the second frame's time stored, then the kill at once.
        var stored = 0
        _ = waitUntilBlocking(every: .microseconds(500)) {
            stored = ((try? String(contentsOfFile: stamps, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            return stored >= 2 || !process.isRunning
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try #require(stored >= 2, "the recorder never stored a second frame")
        let size = (try? FileManager.default.attributesOfItem(atPath: file + ".partial")[.size] as? Int) ?? 0
        let decrypted = try runProgram(obscura, ["decrypt", "--identity-file", "\(dir)/key.txt", file + ".partial"])
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        let plain = "\(dir)/e.\(container).partial"
        let (frames, faults) = Self.decodeFaults(plain, container: container)
        #expect(frames >= 1 && faults.isEmpty, "killed with \(stored) frames stored, \(size) bytes: \(frames) frames; \(faults); \(decrypted.stdout)\(decrypted.stderr)")
    }
}
