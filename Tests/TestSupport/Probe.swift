import Foundation

/// Runs a program and captures its output.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    /// The signal that ended the process, if one did.
    public var signal: Int32? = nil
}

public func runProgram(_ executable: String, _ arguments: [String], cwd: String? = nil,
                       environment extra: [String: String] = [:]) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
    process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
    if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
    if !extra.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 } }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes concurrently so neither fills up.
    nonisolated(unsafe) var errData = Data()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus,
                         stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self),
                         signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil)
}

/// What ffprobe reads from a movie's first video stream.
public struct ProbedVideo: Sendable {
    public let codec: String
    public let width: Int
    public let height: Int
    /// Presentation times of every frame, in seconds, in decode order.
    public let frameTimes: [Double]

    public var frameCount: Int { frameTimes.count }
    public var isMonotonic: Bool { zip(frameTimes, frameTimes.dropFirst()).allSatisfy { $0 < $1 } }
    /// Frames per second from the timestamps themselves.
    public var measuredFrameRate: Double {
        guard frameTimes.count > 1, let first = frameTimes.first, let last = frameTimes.last, last > first else { return 0 }
        return Double(frameTimes.count - 1) / (last - first)
    }

    /// The interval the camera gave frames at: the median of the intervals
    /// between the file's frames, in seconds (a frame the camera skipped or
    /// the recorder dropped on a loaded machine leaves one longer interval,
    /// and moves this not at all); nil with fewer than two frames.
    public var medianFrameInterval: Double? {
        let sorted = frameTimes.sorted()
        let intervals = zip(sorted, sorted.dropFirst()).map { $1 - $0 }.sorted()
        return intervals.isEmpty ? nil : intervals[intervals.count / 2]
    }

    public static func read(_ path: String) throws -> ProbedVideo {
        let stream = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0",
                                                "-show_entries", "stream=codec_name,width,height", "-of", "default=nw=1", path])
        guard stream.status == 0 else { throw ProbeError(message: "ffprobe failed on \(path): \(stream.stderr)") }
        var fields: [String: String] = [:]
        for line in stream.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let frames = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0",
                                                "-show_entries", "frame=pts_time", "-of", "csv=p=0", path])
        guard frames.status == 0 else { throw ProbeError(message: "ffprobe frames failed on \(path): \(frames.stderr)") }
        // A frame with side data prints extra fields (and lines) after its time.
        let times = frames.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: ",", omittingEmptySubsequences: false).first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        return ProbedVideo(codec: fields["codec_name"] ?? "", width: Int(fields["width"] ?? "") ?? 0,
                           height: Int(fields["height"] ?? "") ?? 0, frameTimes: times)
    }
}

public struct ProbeError: Error, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// The package's root folder.
public let packageRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url.path }
    }
    return FileManager.default.currentDirectoryPath
}()

/// A fresh directory under the system's temporary folder, removed when the
/// value goes away.
public final class TemporaryDirectory {
    public let path: String
    public init(_ label: String = "obscura-test") throws {
        var template = Array((NSTemporaryDirectory() + "/\(label)-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A folder under the package's `.build` that the virtual board sees too, at
/// the same path from the package root (`relative`, for the board's script;
/// `path` on this machine). Removed when let go: keep it referenced until
/// what the board left in it has been read.
public final class SharedFolder {
    public let relative: String
    public let path: String
    public init(_ label: String) throws {
        relative = ".build/\(label)-\(getpid())"
        path = packageRoot + "/" + relative
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// What `body` throws, nil when it returns (for checking an error's words;
/// Swift Testing's `#expect(throws:)` gives the error back only from Swift 6.1
/// on, and Debian 13's Swift is 6.0).
public func thrown(_ body: () throws -> Void) -> (any Error)? {
    do { try body() } catch { return error }
    return nil
}

/// What `exiftool -validate -warning` says of a file: "OK", or its
/// warnings, one per line (an image that validates clean prints "OK").
public func exiftoolValidation(_ file: String) throws -> String {
    let result = try runProgram("exiftool", ["-validate", "-warning", "-a", "-s", "-s", "-s", file])
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// FFmpeg decodes every stream of `file` (to nothing) and says what it
/// found wrong: exit status and what it printed at the error level. The
/// frames keep the file's own time base (`-enc_time_base -1`): with the
/// CLI's default, one tick of the guessed frame rate, two frames that a
/// starved camera delivered within one tick of each other would be reported
/// as "non monotonically increasing dts" by its null muxer, which is not a
/// fault of the file.
public func ffmpegDecodeErrors(_ file: String) throws -> ProcessResult {
    try runProgram("ffmpeg", ["-v", "error", "-i", file, "-enc_time_base", "-1", "-f", "null", "-"])
}

/// A fresh age identity made by Debian's age-keygen in `dir` (`key.txt`);
/// its recipient (`age1…`).
public func makeAgeIdentity(in dir: String) throws -> String {
    let made = try runProgram("age-keygen", ["-o", dir + "/key.txt"])
    guard made.status == 0, let recipient = made.stderr.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines),
          recipient.hasPrefix("age1") else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "age-keygen: exit \(made.status): \(made.stderr)"])
    }
    return recipient
}
