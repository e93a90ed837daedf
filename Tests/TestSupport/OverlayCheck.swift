import Foundation
import ObscuraOverlay

/// Checks a recording's burned-in caption frame by frame: each decoded
/// frame's caption region against the renderer's own rendering of the text
/// that frame's timestamp should show, and against the neighbouring second's.
public enum OverlayCheck {
    public struct Frame: Sendable {
        public var index: Int
        public var time: Double
        /// Mean absolute luma difference from the expected caption and from
        /// the other second's, over the pixels where the two differ.
        public var expected: Double
        public var other: Double
        public var right: Bool { expected < other && expected < OverlayCheck.tolerance }
    }

    /// Most mean luma difference (of 255) a right caption may show after
    /// lossy coding.
    public static let tolerance = 24.0

    /// The wall-clock time of a recording's time zero, from `obscura record
    /// --overlay`'s report ("overlay: time zero is S s on the wall clock").
    public static func wallZero(in said: String) -> Double? {
        guard let range = said.range(of: "overlay: time zero is ") else { return nil }
        return Double(said[range.upperBound...].prefix { $0 != " " })
    }

    /// Decodes `file` (ffmpeg, luma only) and checks every frame's caption.
    public static func check(file: String, size: (Int, Int), settings: OverlaySettings, wallZero: Double) throws -> [Frame] {
        let probe = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                               "-of", "csv=p=0", file])
        // One line per frame ("0.000000," when the frame carries side data;
        // its side data's own line is empty).
        let times = probe.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: ",").first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        let raw = file + ".gray"
        let decoded = try runProgram("ffmpeg", ["-v", "error", "-y", "-i", file, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", raw])
        guard decoded.status == 0 else { throw OverlayError("ffmpeg could not decode \(file): \(decoded.stderr)") }
        defer { unlink(raw) }
        return try check(luma: [UInt8](Data(contentsOf: URL(fileURLWithPath: raw))), times: times, size: size,
                         settings: settings, wallZero: wallZero, what: file)
    }

    /// Checks raw RGB frames (memory order R, G, B: what `obscura decode
    /// --pixel-format BG24` writes) against a timestamps file in mkvmerge's
    /// format v2 (`obscura record --timestamps`).
    public static func check(rgb24 file: String, timestamps: String, size: (Int, Int), settings: OverlaySettings,
                             wallZero: Double) throws -> [Frame] {
        let times = try String(contentsOfFile: timestamps, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }.compactMap { Double($0).map { $0 / 1000 } }
        let rgb = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        var luma = [UInt8](repeating: 0, count: rgb.count / 3)
        for i in 0..<luma.count {
            let y = 16 + (65.481 * Double(rgb[3 * i]) + 128.553 * Double(rgb[3 * i + 1]) + 24.966 * Double(rgb[3 * i + 2])) / 255
            luma[i] = UInt8(min(255, max(0, y.rounded())))
        }
        return try check(luma: luma, times: times, size: size, settings: settings, wallZero: wallZero, what: file)
    }

    public static func check(luma: [UInt8], times: [Double], size: (Int, Int), settings: OverlaySettings, wallZero: Double,
                      what: String) throws -> [Frame] {
        let (w, h) = size
        // One decoded picture per frame listed, in the same order.
        guard luma.count == times.count * w * h else {
            throw OverlayError("\(what): \(times.count) frames listed, \(luma.count / (w * h)) decoded")
        }
        let renderer = try OverlayRenderer(settings: settings, frameSize: .init(width: w, height: h))
        var frames: [Frame] = []
        for (i, t) in times.enumerated() {
            let date = Date(timeIntervalSince1970: wallZero + t)
            let second = date.timeIntervalSince1970.rounded(.down)
            // The neighbouring second nearest this frame's time.
            let otherSecond = date.timeIntervalSince1970 - second < 0.5 ? second - 1 : second + 1
            let want = renderer.referenceLuma(at: date)
            let other = renderer.referenceLuma(at: Date(timeIntervalSince1970: otherSecond + 0.5))
            var sumWant = 0.0, sumOther = 0.0, n = 0.0
            for row in 0..<want.height {
                for x in 0..<want.width {
                    let k = row * want.width + x
                    guard want.luma[k] != other.luma[k] else { continue }
                    let v = Double(luma[i * w * h + (want.y + row) * w + want.x + x])
                    sumWant += abs(v - Double(want.luma[k]))
                    sumOther += abs(v - Double(other.luma[k]))
                    n += 1
                }
            }
            frames.append(Frame(index: i, time: t, expected: n > 0 ? sumWant / n : 0, other: n > 0 ? sumOther / n : 0))
        }
        return frames
    }

    /// The camera name the report says the caption carries.
    public static func cameraName(in said: String) -> String? {
        guard let range = said.range(of: "caption's camera name \"") else { return nil }
        return String(said[range.upperBound...].prefix { $0 != "\"" })
    }

    /// The longest run of consecutive right frames that spans a second
    /// boundary (its first and last frame in different seconds), in frames.
    public static func longestRightRunAcrossASecond(_ frames: [Frame], wallZero: Double) -> Int {
        var best = 0, start = 0
        for i in 0...frames.count {
            if i == frames.count || !frames[i].right {
                if i > start {
                    let first = (wallZero + frames[start].time).rounded(.down), last = (wallZero + frames[i - 1].time).rounded(.down)
                    if last > first { best = max(best, i - start) }
                }
                start = i + 1
            }
        }
        return best
    }
}
