import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ObscuraCapture
@testable import ObscuraMedia
@testable import ObscuraPhoto

private func photoSession(_ output: PhotoOutput, format: PixelFormat = .nv12) throws -> CaptureSession {
    let camera = SyntheticCamera(formats: [format])
    let device = CaptureDevice(source: camera)
    let session = CaptureSession()
    session.beginConfiguration()
    try session.addInput(CaptureDeviceInput(device: device))
    try session.addOutput(output)
    try session.setSessionPreset(.vga640x480)
    try session.commitConfiguration()
    return session
}

private func scratch(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("obscura-photo-\(getpid())")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}

/// Records the delegate's calls in order.
private final class Recorder: PhotoCaptureDelegate, @unchecked Sendable {
    let calls = Mutex<[String]>([])
    let photos = Mutex<[Photo]>([])
    func photoOutput(_ output: PhotoOutput, willBeginCaptureFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("willBegin") } }
    func photoOutput(_ output: PhotoOutput, willCapturePhotoFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("willCapture") } }
    func photoOutput(_ output: PhotoOutput, didCapturePhotoFor settings: ResolvedPhotoSettings) { calls.withLock { $0.append("didCapture") } }
    func photoOutput(_ output: PhotoOutput, didFinishProcessingPhoto photo: Photo?, error: (any Error)?) {
        calls.withLock { $0.append("didFinishProcessing") }
        if let photo { photos.withLock { $0.append(photo) } }
    }
    func photoOutput(_ output: PhotoOutput, didFinishCaptureFor settings: ResolvedPhotoSettings?, error: (any Error)?) {
        calls.withLock { $0.append(error == nil ? "didFinishCapture" : "didFinishCapture(error)") }
    }
}

@Suite(.serialized) struct PhotoOutputTests {
    @Test(arguments: [PixelFormat.nv12, .yuv420, .yuyv, .bgr888, .xrgb8888])
    func aJPEGDecodesAndCarriesItsEXIF(format: PixelFormat) async throws {
        let output = PhotoOutput()
        output.rotation = 90
        let session = try photoSession(output, format: format)
        try session.startRunning()
        try await Task.sleep(for: .milliseconds(200))
        let photos = try await output.capturePhoto(with: PhotoSettings(jpegQuality: 85, thumbnailSize: PixelSize(width: 160, height: 120)))
        try session.stopRunning()
        let photo = try #require(photos.first)
        let file = scratch("photo-\(format.fourccString).jpg")
        try photo.fileDataRepresentation().write(to: URL(fileURLWithPath: file))
        // An independent decoder reads the whole image.
        let decoded = try runProgram("djpeg", ["-outfile", file + ".ppm", file])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let header = try String(decoding: Data(contentsOf: URL(fileURLWithPath: file + ".ppm")).prefix(15), as: UTF8.self)
        #expect(header.hasPrefix("P6\n640 480"))
        let exif = try runProgram("exiftool", ["-s", "-Make", "-Model", "-DateTimeOriginal", "-ExposureTime", "-ISO",
                                               "-Orientation#", "-ExifImageWidth", "-Flash#", "-ThumbnailLength", file]).stdout
        #expect(exif.contains("Make                            : Obscura"), "\(exif)")
        #expect(exif.contains("Model                           : Synthetic test pattern"))
        #expect(exif.contains("DateTimeOriginal                : 20"))
        #expect(exif.contains("ExposureTime                    : 1/100"))  // the synthetic camera's 10 ms
        #expect(exif.contains("ISO                             : 100"))    // analogue gain 1.0
        #expect(exif.contains("Orientation                     : 6"))      // rotated 90° clockwise
        #expect(exif.contains("ExifImageWidth                  : 640"))
        #expect(exif.contains("Flash                           : 0"))
        #expect(exif.contains("ThumbnailLength"))
        // The decoded picture is the camera's: mid-grey-ish pattern, not black.
        let ppm = try Data(contentsOf: URL(fileURLWithPath: file + ".ppm"))
        let pixels = ppm.suffix(640 * 480 * 3)
        let mean = Double(pixels.reduce(0) { $0 + Int($1) }) / Double(pixels.count)
        #expect(mean > 60 && mean < 200, "mean \(mean)")
    }

    @Test func callbacksComeInOrderAndTheLagIsWithinAFrame() async throws {
        let output = PhotoOutput()
        let session = try photoSession(output)
        try session.startRunning()
        try await Task.sleep(for: .milliseconds(200))
        for _ in 0..<5 {
            let recorder = Recorder()
            await output.capturePhoto(with: PhotoSettings(), delegate: recorder)
            #expect(recorder.calls.withLock { $0 } == ["willBegin", "willCapture", "didCapture", "didFinishProcessing", "didFinishCapture"])
            let photo = try #require(recorder.photos.withLock { $0.first })
            #expect(photo.resolvedSettings.isZeroShutterLag)
            #expect(photo.photoCount == 1 && photo.resolvedSettings.expectedPhotoCount == 1)
            let lag = try #require(photo.resolvedSettings.shutterLag)
            // The frame nearest the trigger: within one frame interval (33 ms).
            #expect(abs(lag.seconds) <= 0.034, "shutter lag \(lag)")
            try await Task.sleep(for: .milliseconds(Int.random(in: 10...80)))
        }
        // RAW from a camera without a raw stream: an error that says so.
        let recorder = Recorder()
        await output.capturePhoto(with: PhotoSettings(rawPixelFormat: PixelFormat("RGGB")), delegate: recorder)
        #expect(recorder.calls.withLock { $0 } == ["didFinishCapture(error)"])
        try session.stopRunning()
    }
}
