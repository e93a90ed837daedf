import Foundation
import ObscuraMuxing
import Testing
import TestSupport

/// An interrupted recording's torn last fragment keeps its whole samples:
/// files cut inside a fragment's media, at a random byte of a random
/// sample, are rebuilt with every sample that ends before the cut, each
/// track on its own, and nothing after it: exactly the packets of the whole
/// file that end before the cut, with their times. FFmpeg decodes the result with
/// not one error, GStreamer finds the same frames, and every kept packet
/// has the time it had in the whole file.
@Suite struct TornFragmentTests {
    struct Packet: Equatable {
        var stream: Int
        var pts: String
        var pos: Int
        var end: Int
    }

    /// Every packet of `file`: its stream, pts and where its bytes end.
    static func packets(_ file: String) throws -> [Packet] {
        let probe = try runProgram("ffprobe", ["-v", "error", "-show_entries", "packet=stream_index,pts,pos,size", "-of", "csv=p=0", file])
        return probe.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 4, let stream = Int(f[0]), let size = Int(f[2]), let pos = Int(f[3]) else { return nil }
            return Packet(stream: stream, pts: f[1], pos: pos, end: pos + size)
        }
    }

    /// `bytes` cut at `cut`, whole fragments kept and the torn one rebuilt:
    /// the file's bytes, and how many samples the rebuilt one kept.
    static func salvaged(_ bytes: [UInt8], cut: Int, _ container: MovieContainer) throws -> (file: [UInt8], samples: Int) {
        let file = Array(bytes[..<cut])
        let read: WholeFragments.Reader = { offset, count in
            let start = Int(offset)
            return start >= file.count ? [] : Array(file[start..<min(file.count, start + count)])
        }
        let extent = try #require(try WholeFragments.extent(of: container, size: Int64(cut), read: read))
        guard let kept = try TornFragment.salvage(of: container, extent: extent, size: Int64(cut), read: read) else {
            return (Array(file[..<Int(extent.wholeBytes)]), 0)
        }
        #expect(kept.offset == extent.wholeBytes)
        return (Array(file[..<Int(kept.offset)]) + kept.bytes, kept.samples)
    }

    /// Cuts `file` inside twelve packets of its media (past its first
    /// fragment) and checks each rebuilt file.
    static func checkCuts(_ file: String, _ container: MovieContainer, in dir: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let all = try packets(file)
        if container == .mkv {
            // The Segment's size unknown, as a writer that never finished leaves it.
            let segment: [UInt8] = [0x18, 0x53, 0x80, 0x67]
            let at = try #require((0..<200).first { Array(bytes[$0..<($0 + 4)]) == segment })
            try #require(bytes[at + 4] == 0x01, "an 8-byte size")
            bytes.replaceSubrange((at + 5)..<(at + 12), with: [UInt8](repeating: 0xFF, count: 7))
        }
        try #require(all.count > 40, "\(file): \(all.count) packets")
        var rebuiltSome = 0
        for step in 0..<12 {
            // Inside a packet of the second half of the file's media.
            let victim = all.count / 4 + (step * (all.count * 3 / 4 - 1)) / 12 + Int.random(in: 0..<3)
            let cut = Int.random(in: max(all[victim].pos + 1, all[victim].end - 200)..<all[victim].end)
            let (kept, samples) = try salvaged(bytes, cut: cut, container)
            let path = "\(dir)/cut-\(step).\(container.rawValue)"
            try Data(kept).write(to: URL(fileURLWithPath: path))
            let what = "\(file) cut at \(cut) (inside packet \(victim) of \(all.count)), \(samples) samples of the torn fragment kept"
            if samples > 0 { rebuiltSome += 1 }
            // Each track keeps exactly its packets that end before the cut, with their times.
            let got = try packets(path)
            for stream in Set(all.map(\.stream)) {
                let expected = all.filter { $0.stream == stream && $0.end <= cut }.map(\.pts)
                let kept = got.filter { $0.stream == stream }.map(\.pts)
                #expect(kept == expected, "\(what): stream \(stream) kept \(kept.count) packets, \(expected.count) end before the cut")
            }
            let decoded = try ffmpegDecodeErrors(path)
            #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(what): \(decoded.stderr)")
            let frames = got.filter { $0.stream == 0 }.count
            let (gstreamer, status) = CrashSafetyTests.gstreamerFrames(path, container: container.rawValue)
            #expect(status == 0 && gstreamer == frames, "\(what): FFmpeg \(frames) frames, GStreamer \(gstreamer ?? -1) (exit \(status))")
        }
        // (A cut inside a fragment's first frame keeps nothing of it, rightly.)
        #expect(rebuiltSome >= 6, "\(file): most cuts inside a fragment's media keep some of its samples (\(rebuiltSome) of 12)")
    }

    /// FFmpeg's own muxers, with sound beside the picture: each fragment's
    /// `mdat` holds the video's run, then the sound's.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func aTornFragmentOfPictureAndSoundKeepsEachTracksWholeSamples(container: String) throws {
        let scratch = try TemporaryDirectory("obscura-torn-\(container)")
        let file = "\(scratch.path)/av.\(container)"
        let muxing = container == "mkv" ? ["-cluster_time_limit", "500"]
            : ["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "500000"]
        let made = try runProgram("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi",
                                             "-i", "sine=frequency=440:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast",
                                             "-g", "30", "-c:a", "aac"] + muxing + [file])
        try #require(made.status == 0, "\(made.stderr)")
        try Self.checkCuts(file, try #require(MovieContainer(pathExtension: container)), in: scratch.path)
    }

    /// Obscura's own recordings, as its writer makes them.
    @Test(arguments: ["mp4", "mov", "mkv"])
    func aTornFragmentOfARecordingKeepsItsWholeFrames(container: String) throws {
        let scratch = try scratchForBuiltObscura("obscura-torn-rec-\(container)")
        let file = "\(scratch.path)/r.\(container)"
        let made = try runProgram(builtObscura, ["record", "--camera", "synthetic:fast", "--size", "640x480", "--duration", "3", "--output", file])
        try #require(made.status == 0, "\(made.stderr)")
        try Self.checkCuts(file, try #require(MovieContainer(pathExtension: container)), in: scratch.path)
    }

    /// A cut inside the `moof` itself, or a cluster's header, keeps nothing
    /// of that fragment: its index is not whole.
    @Test func aTornIndexKeepsNothing() {
        let moof = WholeFragmentsTests.box("moof", 40)
        let file = WholeFragmentsTests.box("ftyp", 16) + WholeFragmentsTests.box("moof", 40) + WholeFragmentsTests.box("mdat", 20) + moof
        for cut in (file.count - moof.count + 1)..<file.count {
            let extent = WholeFragmentsTests.extent(file, cut: cut, .mp4)!
            let kept = TornFragment.salvage(of: .mp4, extent: extent, size: Int64(cut)) { offset, count in
                Array(file[Int(offset)..<min(cut, Int(offset) + count)])
            }
            #expect(kept == nil, "cut at \(cut)")
        }
    }
}
