import Foundation

/// The summary line `obscura record` prints ("recorded PATH: N frames, …"),
/// read back so a test derives what it expects from what the camera
/// delivered in the same run, never from an assumed frame rate.
public struct RecordingSummary: Sendable {
    /// The whole line.
    public let line: String
    /// Frames in the file.
    public let frames: Int
    /// Seconds the file covers (first frame to the end of the last).
    public let seconds: Double
    /// Frames per second measured over the file.
    public let frameRate: Double
    /// Frames the camera never delivered (gaps in its sequence numbers).
    public let skipped: Int
    /// Frames the output's queue dropped (the encoder behind).
    public let dropped: Int
    /// Frames left out evenly while the recording was stepped down to a
    /// lower rate (the recorder could not keep up with a camera that has no
    /// frame-rate control).
    public let thinned: Int

    /// Frames the camera delivered while the file was recorded: those in it,
    /// those the recorder dropped and those it left out for the pace.
    public var delivered: Int { frames + dropped + thinned }

    /// The camera's frame interval in this run, in seconds.
    public var frameInterval: Double { frameRate > 0 ? 1 / frameRate : 0 }

    /// The first summary line in `text` (for `path` when given).
    public static func find(in text: String, path: String? = nil) -> RecordingSummary? {
        let prefix = "recorded " + (path.map { $0 + ":" } ?? "")
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            if let summary = RecordingSummary(String(line)) { return summary }
        }
        return nil
    }

    public init?(_ line: String) {
        func number(before word: String) -> Double? {
            guard let range = line.range(of: " " + word) else { return nil }
            let head = line[..<range.lowerBound]
            return head.split(separator: " ").last.flatMap { Double($0) }
        }
        func number(after words: String) -> Double? {
            guard let range = line.range(of: words) else { return nil }
            return line[range.upperBound...].split(separator: " ").first
                .flatMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
        }
        guard line.hasPrefix("recorded "), let body = line.range(of: ": ").map({ line[$0.upperBound...] }),
              let frames = body.split(separator: " ").first.flatMap({ Int($0) }) else { return nil }
        self.line = line
        self.frames = frames
        seconds = number(before: "s,") ?? 0
        frameRate = number(before: "fps") ?? 0
        skipped = number(after: "camera skipped ").map { Int($0) } ?? 0
        dropped = number(after: "dropped ").map { Int($0) } ?? 0
        thinned = number(after: "left out for the pace ").map { Int($0) } ?? 0
    }
}
