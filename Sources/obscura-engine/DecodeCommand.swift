import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraEncoding
import ObscuraMedia

struct DecodeCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.decode

    @Option(help: "The stream to decode.") var input: String
    @Option(help: "Its codec.") var codec: String = "fwht"
    @Option(help: "Frame size, WIDTHxHEIGHT.") var size: String
    @Option(help: "Pixel format of the decoded frames (fourcc), e.g. BG24.") var pixelFormat: String = "BG24"
    @Option(help: "Where to write the frames (raw).") var output: String

    func validate() throws {
        try Options.check {
            try Options.inputFile(input, "--input")
            try Options.choice(codec, VideoCodec.allCases.map(\.rawValue), "--codec")
            _ = try Options.size(size, "--size")
            _ = try Options.fourcc(pixelFormat, "--pixel-format")
            try Options.outputFile(output, "--output", extensions: nil)
        }
    }

    func run() async throws {
        try await Self.reporting {
            guard let codec = VideoCodec(rawValue: codec) else { throw UserFacingError("unknown codec \"\(codec)\"") }
            guard let size = PixelSize(parsing: size) else { throw UserFacingError("cannot read size \"\(size)\"") }
            let stream = try Data(contentsOf: URL(fileURLWithPath: input))
            let format = try Options.fourcc(pixelFormat, "--pixel-format")
            let decoder = try V4L2MemoryToMemoryDecoder(codec: codec, format: format, size: size)
            var frames: [Data] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + 256 << 10)
                frames += try decoder.decode(stream.subdata(in: offset..<end))
                offset = end
            }
            frames += try decoder.finish()
            var out = Data()
            for f in frames { out.append(f) }
            try out.write(to: URL(fileURLWithPath: output))
            Log.output("decoded \(frames.count) frames \(size) \(format) with \(decoder.node) into \(output)")
        }
    }
}
