import ObscuraCommandLine
import Foundation
import ObscuraCamera
import ObscuraCapture
import ObscuraMedia
import ObscuraSystem
import ObscuraSoftwareCamera

/// Picks the camera a command asked for: an id from `obscura devices`, the
/// first camera when none is named, `synthetic` — a test pattern that
/// needs no camera at all — or `file:PATH`: raw frames from a file (in the
/// --pixel-format and --size given), delivered as fast as the pipeline takes
/// them on a virtual 30 fps clock, for benchmarks; or `dmabuf-file:PATH`:
/// the same, each of the file's first frames (at most 32) placed once into a
/// dmabuf of its own, as a camera delivers them (an encoder imports them).
enum CameraChoice {
    static func device(_ id: String?) throws -> CaptureDevice {
        for prefix in ["file:", "dmabuf-file:"] where id?.hasPrefix(prefix) == true {
            let path = String(id!.dropFirst(prefix.count))
            do { try Syscalls.checkAccess(path, R_OK) } catch { throw UserFacingError("cannot read raw frames from \"\(path)\": \(error)") }
            if prefix == "dmabuf-file:" && DmabufAllocator.available == nil {
                throw UserFacingError("\(prefix) needs a dmabuf allocator: none of "
                    + "\(DmabufAllocator.candidates.joined(separator: ", ")) is here; file:\(path) maps the file instead")
            }
            return CaptureDevice(source: SyntheticCamera(id: id!, formats: [.nv12, .yuv420, .yuyv, .bgr888, .xrgb8888],
                                                         content: prefix == "file:" ? .rawFile(path) : .rawFileInDmabufs(path),
                                                         pacing: .asFastAsBuffersReturn))
        }
        if let id, CaptureDevice.isTestPattern(id) { return CaptureDevice.testPattern(id: id) }
        let devices = try CaptureDevice.devices()
        if let id {
            guard let device = devices.first(where: { $0.uniqueID == id }) else {
                throw CameraError.unknownCamera(id: id, available: devices.map(\.uniqueID) + ["synthetic"])
            }
            return device
        }
        guard let first = devices.first else { throw CameraError.noCameras(libcameraVersion: CameraManager.libcameraVersion) }
        return first
    }

    /// Sets the device's active format from a requested pixel format and size,
    /// refusing what the camera does not offer with a list of what it does.
    /// Returns false when nothing was requested (the preset decides).
    static func applyFormat(_ device: CaptureDevice, format: PixelFormat?, size: PixelSize?) throws -> Bool {
        guard format != nil || size != nil else { return false }
        let camera = device.cameraDescription
        let offered = camera.formats[.videoRecording] ?? []
        var candidates = offered
        if let format {
            candidates = offered.filter { $0.pixelFormat == format }
            if candidates.isEmpty { throw CameraError.unsupportedPixelFormat(format, available: offered.map(\.pixelFormat)) }
        }
        if let size, !candidates.contains(where: { $0.contains(size) }) {
            let available = candidates.map { "\($0.pixelFormat) \($0.rangeDescription)" }.joined(separator: "; ")
            throw CameraError.unsupportedSize(size, format: format ?? candidates.first?.pixelFormat ?? .nv12, available: available)
        }
        let pixelFormat = format ?? (candidates.contains { $0.pixelFormat == .nv12 } ? .nv12 : candidates[0].pixelFormat)
        let chosenSize = size ?? candidates.first { $0.pixelFormat == pixelFormat }!.sizes.last { $0.width <= 1920 && $0.height <= 1080 }
            ?? candidates[0].maximumSize
        guard let chosen = device.format(pixelFormat: pixelFormat, size: chosenSize) else {
            throw CameraError.unsupportedSize(chosenSize, format: pixelFormat, available: candidates.map(\.rangeDescription).joined(separator: "; "))
        }
        try device.withConfigurationLock { try $0.setActiveFormat(chosen) }
        return true
    }
}
