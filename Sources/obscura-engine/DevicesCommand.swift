import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraAudio
import ObscuraCamera
import ObscuraMedia

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.devices

    @Flag(help: "Also list the controls each camera offers.")
    var controls = false

    func run() async throws {
        try await Self.reporting {
            let microphones = AudioCaptureDevice.devices()
            if microphones.isEmpty { Log.output("audio: no capture devices (video-only recordings)") }
            for m in microphones { Log.output("audio \"\(m.id)\": \(m.name)") }
            let manager = try CameraManager.start()
            if let layer = CameraLibrary.loaded {
                Log.output("libcamera \(layer.libcamera.version) (\(layer.libcamera.path), \(CameraManager.libcameraRuntimeVersion)), "
                      + "shim \(layer.shim) (built with libcamera \(CameraManager.libcameraVersion)'s headers)")
                if let warning = layer.warning { Log.output("warning: \(warning)") }
            }
            let cameras = manager.cameras
            guard !cameras.isEmpty else { throw CameraError.noCameras(libcameraVersion: CameraManager.libcameraVersion) }
            for camera in cameras {
                Log.output(Self.describe(camera, controls: controls))
            }
        }
    }

    static func describe(_ camera: CameraDescription, controls: Bool) -> String {
        var lines: [String] = []
        lines.append("camera \"\(camera.id)\"")
        lines.append("  model: \(camera.model)")
        lines.append("  position: \(camera.position.rawValue)" + (camera.rotation.map { ", rotation \($0)°" } ?? ""))
        if let range = camera.frameRateRange {
            lines.append(String(format: "  frame rate: %.2f to %.2f fps (frame duration %@ to %@)", range.lowerBound, range.upperBound,
                                "\(camera.frameDurationRange!.lowerBound)", "\(camera.frameDurationRange!.upperBound)"))
        } else {
            lines.append("  frame rate: not reported by the camera (no FrameDurationLimits control); runs at the sensor's own rate")
        }
        for role in [StreamRole.videoRecording, .stillCapture, .raw] {
            guard let formats = camera.formats[role] else { continue }
            lines.append("  \(role) formats:")
            for format in formats {
                let sizes = format.sizes.map(\.description).joined(separator: " ")
                let steps = format.horizontalStep > 0 ? " (steps \(format.horizontalStep)x\(format.verticalStep))" : ""
                lines.append("    \(format.pixelFormat) [\(format.pixelFormat.fourccString)]: \(format.rangeDescription)\(steps)")
                if !sizes.isEmpty { lines.append("      sizes: \(sizes)") }
            }
        }
        if controls {
            lines.append("  controls:")
            for control in camera.controls {
                var text = "    \(control.name)"
                if let min = control.minimum, let max = control.maximum { text += " \(min)…\(max)" }
                if let def = control.defaultValue { text += " default \(def)" }
                lines.append(text)
            }
        }
        return lines.joined(separator: "\n")
    }
}
