import ArgumentParser
import Foundation
import ObscuraCapture
import ObscuraMedia
import ObscuraPhoto

struct PhotoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photo",
        abstract: "Take a photo (JPEG with EXIF) from the camera.",
        discussion: """
        The session runs, the photo is taken from the frame nearest the trigger \
        (zero shutter lag) after --warm-up seconds, and written to --output \
        (as <output>.partial first). Prints the size, shutter lag and file.
        """)

    @Option(help: "Output file (.jpg).") var output: String
    @Option(help: "Camera id (see `obscura devices`), or synthetic.") var camera: String?
    @Option(help: "Frame size, e.g. 1280x720.") var size: String?
    @Option(help: "Camera pixel format fourcc, e.g. NV12.") var pixelFormat: String?
    @Option(help: "JPEG quality, 1–100.") var quality: Int = 90
    @Option(help: "Embedded thumbnail size, e.g. 160x120; none without.") var thumbnail: String?
    @Option(help: "Seconds the camera runs before the photo (exposure settles).") var warmUp: Double = 0.5

    func run() async throws {
        try await Self.reporting {
            guard (1...100).contains(quality) else { throw UserFacingError("--quality must be 1–100, not \(quality)") }
            let thumbSize: PixelSize? = try thumbnail.map {
                guard let s = PixelSize(parsing: $0) else { throw UserFacingError("cannot read thumbnail size \"\($0)\"; write WIDTHxHEIGHT") }
                return s
            }
            let requestedSize: PixelSize? = try size.map {
                guard let parsed = PixelSize(parsing: $0) else { throw UserFacingError("cannot read size \"\($0)\"; write WIDTHxHEIGHT, e.g. 1280x720") }
                return parsed
            }
            let device = try CameraChoice.device(camera)
            let chosen = try CameraChoice.applyFormat(device, format: pixelFormat.map { PixelFormat($0) }, size: requestedSize)
            let session = CaptureSession(log: { Log.note($0) })
            let photoOutput = PhotoOutput()
            session.beginConfiguration()
            try session.addInput(CaptureDeviceInput(device: device))
            try session.addOutput(photoOutput)
            try session.setSessionPreset(chosen ? .inputPriority : .photo)
            try session.commitConfiguration()
            try session.startRunning()
            defer { try? session.stopRunning() }
            try await Task.sleep(for: .milliseconds(Int(warmUp * 1000)))
            let photos = try await photoOutput.capturePhoto(with: PhotoSettings(jpegQuality: quality, thumbnailSize: thumbSize))
            guard let photo = photos.first else { throw UserFacingError("the capture gave no photo") }
            let data = photo.fileDataRepresentation()
            try data.write(to: URL(fileURLWithPath: output + ".partial"))
            guard rename(output + ".partial", output) == 0 else { throw UserFacingError("cannot rename \(output).partial to \(output)") }
            let lag = photo.resolvedSettings.shutterLag.map { String(format: "%.1f ms", $0.seconds * 1000) } ?? "?"
            Log.output("photo \(output): \(photo.pixelSize) JPEG, \(data.count / 1024) KiB, shutter lag \(lag)")
        }
    }
}
