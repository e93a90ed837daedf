import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// The hardware encoder path: vimc's frames (BGR888 dmabufs from libcamera)
/// imported into vicodec's V4L2 encoder, decoded again by vicodec's decoder.
@Suite struct EncoderBoardTests {
    let folder = ".build/encoder-board-\(getpid())"

    /// PSNR in dB of two equally long byte buffers.
    private func psnr(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Double {
        var sum = 0.0
        for (x, y) in zip(a, b) {
            let d = Double(x) - Double(y)
            sum += d * d
        }
        let mse = sum / Double(max(1, min(a.count, b.count)))
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    @Test(arguments: ["single-planar", "multi-planar"])
    func cameraDmabufsGoIntoVicodecWithoutACopyAndDecodeBack(api: String) throws {
        let dir = packageRoot + "/\(folder)/\(api)"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let result = try VirtualBoard.run(scenario: "Encoder/cameraDmabufsGoIntoVicodecWithoutACopyAndDecodeBack", [folder, api], timeout: 300)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let out = result.stdout, err = result.stderr
        // One line says which encoder and why; the path has no CPU copy.
        #expect(err.contains("encoder vicodec fwht (V4L2 memory-to-memory, /dev/video3); frames BGR888 imported by dmabuf, no CPU copy"), "\(err)")
        #expect(err.contains("[hardware encoder vicodec (/dev/video3): camera dmabufs imported, no CPU copy"))
        let recorded = try #require(out.split(separator: "\n").first { $0.hasPrefix("recorded /tmp/v.fwht") }.map(String.init), "\(out)")
        #expect(recorded.contains("CPU copies per frame 0.00"), "\(recorded)")
        let frames = try #require(recorded.components(separatedBy: ": ").dropFirst().first.flatMap { Int($0.split(separator: " ")[0]) })
        // Three seconds of the camera's frames, whatever its pace in this run.
        let summary = try #require(RecordingSummary(recorded))
        // (Two frames prove the path; a starved board's encoder may keep no more.)
        #expect(frames >= 2 && summary.seconds >= 3 - summary.frameInterval - 0.05, "\(recorded)")
        // Stop drained every frame: the decoder gets back as many as were recorded.
        #expect(out.contains("decoded \(frames) frames 648x480 BGR888 with vicodec (/dev/video4)"), "\(out)")
        // Every decoded frame is the camera's picture (vimc's bars; only its clock text moves).
        let decoded = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/decoded.rgb")))
        let reference = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/reference.ppm")))
        let frameBytes = 648 * 480 * 3
        let pixels = reference.suffix(frameBytes)
        #expect(decoded.count == frames * frameBytes)
        var worst = 99.0
        for k in 0..<min(frames, decoded.count / frameBytes) {
            worst = min(worst, psnr(decoded[(k * frameBytes)..<((k + 1) * frameBytes)], pixels))
        }
        #expect(worst > 25, "the worst decoded frame is \(worst) dB from the camera's")
        // The check can tell: red and blue swapped would not pass.
        var swapped = Array(pixels)
        for i in stride(from: 0, to: swapped.count, by: 3) { swapped.swapAt(i, i + 2) }
        #expect(psnr(decoded[0..<frameBytes], swapped[...]) < 15)
        #expect(out.contains("bad-exit=1"))
        #expect(err.contains("vicodec (/dev/video3) rejects 636x480 (VIDIOC_S_FMT answered 640x480); it takes 640x360 to 4096x2160 in steps of 8x8"), "\(err)")
        #expect(!out.contains("leftover: "), "\(out)")
    }

    /// The asset writer shares the movie output's encoder stage: appended
    /// camera frames go into vicodec by dmabuf too, and every frame appended
    /// decodes back.
    @Test func theAssetWriterGetsTheHardwareEncoderToo() throws {
        let result = try VirtualBoard.run(scenario: "Encoder/theAssetWriterGetsTheHardwareEncoderToo", timeout: 300)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let out = result.stdout, err = result.stderr
        #expect(err.contains("encoder vicodec fwht (V4L2 memory-to-memory, /dev/video3) [hardware encoder vicodec (/dev/video3): camera dmabufs imported, no CPU copy"), "\(err)")
        let recorded = try #require(out.split(separator: "\n").first { $0.hasPrefix("recorded /tmp/w.fwht through an asset writer: ") }.map(String.init), "\(out)")
        #expect(recorded.contains("CPU copies per frame 0.00"), "\(recorded)")
        let frames = try #require(Int(recorded.components(separatedBy: ": ")[1].split(separator: " ")[0]), "\(recorded)")
        #expect(frames >= 2, "\(recorded)")  // (the path ran; a starved encoder keeps few)
        let camera = try #require(recorded.components(separatedBy: ", ").first { $0.hasSuffix("s of camera time") }
            .flatMap { Double($0.split(separator: " ")[0]) }, "\(recorded)")
        #expect(camera >= 2.5, "three seconds were asked for: \(recorded)")
        #expect(out.contains("decoded \(frames) frames 648x480 BGR888 with vicodec (/dev/video4)"), "\(out)")
    }

    @Test func withoutAHardwareH264EncoderTheRecordingFallsBackAndSaysWhy() throws {
        let result = try VirtualBoard.run(scenario: "Encoder/withoutAHardwareH264EncoderTheRecordingFallsBackAndSaysWhy")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("[software encoder libx264 (libavcodec); hardware: no V4L2 memory-to-memory encoder makes h264 (found: vicodec (/dev/video3)"),
                "\(result.stderr)")
        #expect(result.stdout.contains("codec_name=h264"))
    }

    /// Frames from a file placed in dmabufs (`--camera dmabuf-file:`, what
    /// `bench/record-vs-ffmpeg --encoder v4l2m2m` gives Obscura) go into the
    /// V4L2 encoder by import, as a camera's do: no CPU copy. A kernel with
    /// no dmabuf allocator (Debian 12's has neither udmabuf nor DMA heaps;
    /// Debian 13's has udmabuf) gets the camera refused by name. The
    /// benchmark finds no H.264 encoder on the virtual board (vicodec makes
    /// FWHT), says so and exits 77 before measuring anything.
    @Test func fileFramesInDmabufsGoIntoTheEncoderWithoutACopy() throws {
        let result = try VirtualBoard.run(scenario: "Encoder/fileFramesInDmabufsGoIntoTheEncoderWithoutACopy", timeout: 300)
        let out = result.stdout, err = result.stderr
        let allocators = out.split(separator: "\n").first { $0.hasPrefix("allocators: ") }?.dropFirst("allocators: ".count)
            .split(separator: " ") ?? []
        if VirtualBoard.suite == "bookworm" { #expect(allocators.isEmpty, "\(allocators)") }
        if VirtualBoard.suite == "trixie" { #expect(allocators.contains("/dev/udmabuf"), "\(allocators)") }
        if allocators.isEmpty {
            #expect(out.contains("record-exit=1"), "\(out)\(err)")
            #expect(err.contains("dmabuf-file: needs a dmabuf allocator: none of /dev/dma_heap/vidbuf_cached, /dev/dma_heap/linux,cma, /dev/dma_heap/system, /dev/udmabuf is here"), "\(err)")
        } else {
            #expect(out.contains("record-exit=0"), "\(out)\(err)")
            #expect(err.contains("frames NV12 imported by dmabuf, no CPU copy"), "\(err)")
            let recorded = try #require(out.split(separator: "\n").first { $0.hasPrefix("recorded /tmp/d.fwht: ") }.map(String.init), "\(out)")
            // One second on the file camera's virtual 30 fps clock, none copied.
            #expect(recorded.hasPrefix("recorded /tmp/d.fwht: 30 frames") && recorded.contains("CPU copies per frame 0.00"), "\(recorded)")
        }
        #expect(out.contains("bench-exit=77"), "\(out)\(err)")
        #expect(err.contains("record-vs-ffmpeg: no H.264 memory-to-memory encoder here, nothing to compare: no V4L2 memory-to-memory encoder makes h264"), "\(err)")
    }
}
}
