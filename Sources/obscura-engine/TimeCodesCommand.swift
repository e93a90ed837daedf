import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraMedia
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Reads decoded frames (8-bit luma, one after another, as `ffmpeg -f
/// rawvideo -pix_fmt gray` writes them) from standard input and prints, for
/// each that carries a `FrameTimeCode` (the `synthetic:stamped` camera's),
/// its camera time and when it was read here: how a live view's latency is
/// measured from end to end (bench/live-latency).
struct TimeCodesCommand: ParsableCommand {
    static let configuration = CommandDescriptions.timeCodes

    @Option(help: "The frames' size, WIDTHxHEIGHT.") var size: String

    func validate() throws {
        try Options.check { _ = try Options.size(size, "--size") }
    }

    func run() throws {
        guard let size = PixelSize(parsing: size), FrameTimeCode.fits(width: size.width, height: size.height) else {
            throw ValidationError("--size \(size) has no room for a time code (at least 128 pixels wide)")
        }
        var frame = [UInt8](repeating: 0, count: size.area)
        var found = 0, frames = 0
        while try Self.fill(&frame) {
            let read = Syscalls.monotonicNanoseconds()
            frames += 1
            let code = frame.withUnsafeBytes { FrameTimeCode.read(from: $0.baseAddress!, stride: size.width, width: size.width, height: size.height) }
            guard let code else { continue }
            found += 1
            Log.output("\(code) \(read)")
        }
        Log.note("\(frames) frames, \(found) with a time code")
    }

    /// Fills `buffer` from standard input; false at its end.
    static func fill(_ buffer: inout [UInt8]) throws -> Bool {
        var filled = 0
        while filled < buffer.count {
            let n = try buffer.withUnsafeMutableBytes { b throws(SystemError) in
                try Syscalls.read(STDIN_FILENO, into: UnsafeMutableRawBufferPointer(rebasing: b[filled...]), path: "standard input")
            }
            if n == 0 { return false }
            filled += n
        }
        return true
    }
}
