import Foundation

/// Finds tone onsets in mono s16 samples: the first loud sample after at least `gap` quiet ones.
public func beepOnsets(_ samples: [Int16], rate: Int, threshold: Int16 = 3000, gap: Double = 0.3) -> [Double] {
    var onsets: [Double] = []
    var quiet = Int(gap * Double(rate))
    for (i, s) in samples.enumerated() {
        if abs(Int(s)) >= Int(threshold) {
            if quiet >= Int(gap * Double(rate)) { onsets.append(Double(i) / Double(rate)) }
            quiet = 0
        } else {
            quiet += 1
        }
    }
    return onsets
}

/// Beep onsets in the first audio track of `file`, in file time (the
/// track's start time added: decoded audio begins at its first sample).
public func beepTimes(in file: String) throws -> [Double] {
    let start = try runProgram("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=start_time", "-of", "csv=p=0", file])
    let offset = Double(start.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    return beepOnsets(try decodedAudio(file), rate: 48_000).map { $0 + offset }
}

/// The first audio track of `file`, decoded by ffmpeg to mono s16 at `rate`.
public func decodedAudio(_ file: String, rate: Int = 48_000) throws -> [Int16] {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("audio-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).raw").path
    defer { unlink(out) }
    let r = try runProgram("ffmpeg", ["-v", "error", "-y", "-i", file, "-map", "0:a:0", "-ac", "1", "-ar", String(rate), "-f", "s16le", out])
    guard r.status == 0 else { throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
    let data = try Data(contentsOf: URL(fileURLWithPath: out))
    return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

