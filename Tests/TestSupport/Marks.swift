import Foundation

/// One cue of a recording's text track, as FFmpeg reads it back.
public struct Mark: Sendable, Equatable {
    public let seconds: Double
    public let text: String
}

/// The cues of `file`'s first text track, read by ffmpeg (as SubRip) and
/// not by Obscura; throws when ffmpeg finds no such track or cannot read it.
public func marks(in file: String) throws -> [Mark] {
    let result = try runProgram("ffmpeg", ["-v", "error", "-i", file, "-map", "0:s:0", "-f", "srt", "-"])
    guard result.status == 0 else { throw ProbeError(message: "ffmpeg could not read the text track of \(file): \(result.stderr)") }
    // "1\n00:00:02,345 --> 00:00:04,345\ntext\n\n"
    var out: [Mark] = []
    for cue in result.stdout.components(separatedBy: "\n\n") {
        let lines = cue.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard lines.count >= 3, let arrow = lines[1].range(of: " --> ") else { continue }
        let start = lines[1][..<arrow.lowerBound].replacingOccurrences(of: ",", with: ".").split(separator: ":")
        guard start.count == 3, let h = Double(start[0]), let m = Double(start[1]), let s = Double(start[2]) else { continue }
        // SubRip may carry the cue's style as tags (<font face="…">): the text is what is between them.
        let text = lines[2...].joined(separator: "\n").replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
        out.append(Mark(seconds: h * 3600 + m * 60 + s, text: text))
    }
    return out
}
