import Foundation
import Testing
import TestSupport

/// A disk that really fills up while recording: a 4 MiB tmpfs (mounted in a
/// mount namespace of the test's own: `unshare -m` as root, `unshare -rm`
/// with a user namespace otherwise, which a chroot refuses), filled by
/// another process once the recording has written about 700 KB, leaving a
/// few bytes to a few fragments' worth, with no free-space margin
/// (`--min-free-space 0`), so a write itself gets ENOSPC, mostly part-way
/// through a fragment. Every file left must decode without a single error,
/// hold exactly the frames the summary says, and match its checksum; no
/// `.partial` is left.
@Suite(.serialized) struct DiskFullTests {
    let obscura = packageRoot + "/.build/debug/obscura"

    /// Runs `command` (each "{m}" in it the small filesystem) and fills the
    /// filesystem once `after` bytes are written, leaving `leave` bytes;
    /// then lists what is left and checks each movie file
    /// (Tests/ObscuraTests/scripts/fill-disk.sh). With `onceFilled`, the
    /// command starts once the filesystem is full.
    private func fill(_ command: [String], leave: Int, after: Int = 700_000, onceFilled: Bool = false) throws -> (out: String, files: [String: String]) {
        let script = packageRoot + "/Tests/ObscuraTests/scripts/fill-disk.sh"
        let arguments = [script, String(leave), String(after)] + (onceFilled ? ["--once-filled"] : []) + command
        let result = try runProgram("unshare", [geteuid() == 0 ? "-m" : "-rm", "bash"] + arguments)
        try #require(!result.stdout.contains("mount failed") && result.stdout.contains("rc="),
                     "a mount namespace of its own is needed for the tmpfs (unshare): \(result.stdout)\(result.stderr)")
        var files: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("file: ") {
            let parts = line.dropFirst(6).split(separator: " ")
            if parts.count == 2 { files[String(parts[0])] = String(parts[1].dropFirst("frames=".count)) }
        }
        return (result.stdout, files)
    }

    private func summaryFrames(_ out: String) -> Int? {
        guard let line = out.split(separator: "\n").first(where: { $0.hasPrefix("said: recorded ") }),
              let r = line.range(of: ": ", range: line.range(of: "recorded ")!.upperBound..<line.endIndex) else { return nil }
        return Int(line[r.upperBound...].prefix { $0.isNumber })
    }

    /// Each container, and segments, at several fill levels.
    @Test(arguments: [("mp4", 0, ""), ("mov", 5_000, ""), ("mkv", 20_000, ""), ("mp4", 60_000, ""),
                      ("mkv", 3_000, "--segment 1"), ("mp4", 9_000, "--segment 1")])
    func aFullDiskLeavesWholeCountedCheckedFiles(_ container: String, _ leave: Int, _ extra: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let (out, files) = try fill([obscura, "record", "--camera", "synthetic", "--size", "640x480", "--duration", "30", "--min-free-space", "0",
                                     "--output", "{m}/clip.\(container)"] + extra.split(separator: " ").map(String.init), leave: leave)
        #expect(out.contains("rc=3\n"), "\(out)")
        #expect(out.contains("finished: disk full"), "\(out)")
        #expect(!out.split(separator: "\n").contains { $0.hasPrefix("left: ") && $0.hasSuffix(".partial") }, "\(out)")
        #expect(!out.contains("decode-error: "), "\(out)")
        #expect(!files.isEmpty, "\(out)")
        // Each file's checksum matches, or the summary says why it has none
        // (the bytes cut from a torn tail may not free a block for it).
        let checked = out.split(separator: "\n").filter { $0.hasPrefix("checksum: ") }
        #expect(checked.count == files.count, "\(out)")
        for line in checked where !line.hasSuffix(": OK") {
            let name = line.dropFirst("checksum: ".count).split(separator: ":")[0]
            #expect(line.hasSuffix(": none") && out.contains("/\(name): no checksum: "), "\(out)")
        }
        let inFiles = files.values.reduce(0) { $0 + (Int($1) ?? -1_000_000) }
        #expect(summaryFrames(out) == inFiles, "the summary's frames against the decoders': \(out)")
        if !extra.isEmpty { #expect(files.count >= 2, "\(out)") }
    }

    @Test func aFullDiskEndsAnAssetWritersFileTheSameWay() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        let (out, files) = try fill([obscura, "record", "--camera", "synthetic", "--size", "640x480", "--duration", "30", "--min-free-space", "0",
                                     "--through", "asset-writer", "--output", "{m}/clip.mov"], leave: 7_000)
        #expect(!out.contains("rc=0\n"), "\(out)")
        #expect(!out.split(separator: "\n").contains { $0.hasPrefix("left: ") && $0.hasSuffix(".partial") }, "\(out)")
        #expect(!out.contains("decode-error: "), "\(out)")
        let frames = try #require(files["clip.mov"].flatMap { Int($0) }, "\(out)")
        #expect(out.contains("\(frames) frames kept in "), "the error says what the file holds: \(out)")
        #expect(out.contains("checksum: clip.mov: OK") || out.contains("clip.mov: no checksum: "), "\(out)")
    }

    @Test func aPhotoOnAFullDiskIsRefusedAndLeavesNothing() throws {
        try #require(FileManager.default.isExecutableFile(atPath: obscura), "build first: swift build")
        // The photo is taken once the disk is full.
        let (out, _) = try fill([obscura, "photo", "--camera", "synthetic", "--warm-up", "0", "--output", "{m}/p.jpg"],
                                leave: 0, after: 0, onceFilled: true)
        #expect(!out.contains("rc=0\n"), "\(out)")
        #expect(out.contains("the photo was not kept"), "\(out)")
        #expect(!out.contains("left: "), "nothing but the filler: \(out)")
    }
}
