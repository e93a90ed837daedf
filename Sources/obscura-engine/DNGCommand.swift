import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraMedia
import ObscuraPhoto
import ObscuraFiles

struct DNGCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.dng

    @Option(help: "The V4L2 node's name, e.g. \"Raw Capture 0\".") var node: String
    @Option(help: "Bayer pattern: RGGB, GRBG, GBRG, BGGR.") var pattern: String
    @Option(help: "Bits per sample: 8 or 10.") var bits: Int = 8
    @Option(help: "Frame size, e.g. 640x480.") var size: String
    @Option(help: "Output file (.dng).") var output: String
    @Flag(help: "Leave out the RGB preview.") var noPreview = false

    func validate() throws {
        try Options.check {
            try Options.choice(String(bits), ["8", "10"], "--bits")
            try Options.choice(pattern, ["RGGB", "GRBG", "GBRG", "BGGR"], "--pattern")
            _ = try Options.size(size, "--size", even: true)
            try Options.outputFile(output, "--output", extensions: ["dng"])
        }
    }

    func run() async throws {
        try await Self.reporting {
            guard let frameSize = PixelSize(parsing: size) else { throw UserFacingError("cannot read size \"\(size)\"; write WIDTHxHEIGHT") }
            let raw = try RawNode.capture(node: node, pattern: pattern, bits: bits, size: frameSize)
            let data = try DNGWriter.data(for: raw, model: node, previewWidth: noPreview ? nil : 256)
            do { try DurableFile.write(data, to: output, via: output + ".partial") } catch {
                throw UserFacingError("the DNG was not kept: \(error)")
            }
            Log.output("dng \(output): \(raw.size) \(raw.pattern) \(raw.bitsPerSample)-bit, \(data.count / 1024) KiB")
        }
    }
}
