import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraOverlay
import ObscuraSystem
import ObscuraCapture
import ObscuraEncoding
import ObscuraMedia
import ObscuraPreview

struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.preview

    @Option(help: "Camera id (see `obscura devices`), or synthetic.") var camera: String?
    @Option(help: "Frame size, e.g. 640x480.") var size: String?
    @Option(help: "Camera pixel format, by name or fourcc, e.g. NV12 or BGR888 (BG24).") var pixelFormat: String?
    @Option(help: "Seconds to show (SIGINT or SIGTERM ends it sooner).") var duration: Double = 5
    @Option(help: "DRM device, e.g. /dev/dri/card1 (default: the first with a display).") var device: String?
    @Option(help: "Connector to prefer, e.g. HDMI-A-1 (default: the first connected).") var connector: String?
    @Option(help: "Plane for the frames: overlay (over the background) or primary.") var plane: String = "overlay"
    @Option(help: "fit (letterbox), fill (crop) or stretch.") var gravity: String = "fit"
    @Option(help: "Clockwise rotation: 0, 90, 180 or 270.") var rotation: Int = 0
    @Option(help: "Where on the screen, WIDTHxHEIGHT+X+Y (default: all of it).") var destination: String?
    @Option(help: "Background colour around the frame, RRGGBB.") var background: String = "000000"
    @Flag(help: "A test pattern from another KMS client's XRGB8888 buffer instead of the camera.") var pattern = false
    @Option(help: "Pattern size, WIDTHxHEIGHT.") var patternSize: String = "320x240"
    @Option(help: "Save the screen, read back through the writeback connector, as PPM.") var writeback: String?
    @Option(help: "Save one camera frame (what the preview shows) as PPM.") var saveFrame: String?
    @Flag(help: "List the KMS devices, connectors and planes, and exit.") var list = false
    @Flag(help: "Show the burned-in caption a recording gets: each frame's date and time, the camera's name (and --overlay-text).") var overlay = false
    @Option(help: "With --overlay: a text of one's own on the caption's second line.") var overlayText: String?

    func validate() throws {
        try Options.check {
            try Limits.runSeconds.check(duration, "--duration")
            try Options.choice(String(rotation), ["0", "90", "180", "270"], "--rotation")
            try Options.choice(plane, ["overlay", "primary"], "--plane")
            try Options.choice(gravity, PreviewGravity.allCases.map(\.rawValue), "--gravity")
            if overlayText != nil, !overlay { throw UserFacingError("--overlay-text needs --overlay") }
            if let size { _ = try Options.size(size, "--size") }
            _ = try Options.size(patternSize, "--pattern-size")
            if let pixelFormat { _ = try Options.fourcc(pixelFormat, "--pixel-format") }
            if let destination, PreviewRect(parsing: destination) == nil {
                throw UserFacingError("--destination: cannot read \"\(destination)\"; write WIDTHxHEIGHT+X+Y")
            }
            guard UInt32(background, radix: 16) != nil, background.count == 6 else {
                throw UserFacingError("--background: cannot read \"\(background)\"; write RRGGBB, e.g. 203040")
            }
            if let writeback { try Options.outputFile(writeback, "--writeback", extensions: ["ppm"]) }
            if let saveFrame { try Options.outputFile(saveFrame, "--save-frame", extensions: ["ppm"]) }
        }
    }

    func run() async throws {
        try await Self.reporting {
            if list { return try Self.listDevices() }
            guard let gravity = PreviewGravity(rawValue: gravity) else {
                throw UserFacingError("--gravity \(self.gravity) is not one of fit, fill, stretch")
            }
            let area: PreviewRect? = try destination.map {
                guard let r = PreviewRect(parsing: $0) else { throw UserFacingError("cannot read --destination \"\($0)\"; write WIDTHxHEIGHT+X+Y") }
                return r
            }
            guard let colour = UInt32(background, radix: 16), background.count == 6 else {
                throw UserFacingError("cannot read --background \"\(background)\"; write RRGGBB, e.g. 203040")
            }
            guard ["overlay", "primary"].contains(plane) else { throw UserFacingError("--plane \(plane) is not one of overlay, primary") }
            // The camera first: the caption carries its name.
            let cameraDevice = pattern ? nil : try CameraChoice.device(camera)
            let preview = try PreviewOutput(device: device, connector: connector, overlay: plane == "overlay", gravity: gravity, rotation: rotation, destination: area,
                                            backgroundColour: colour, caption: caption(cameraName: cameraDevice?.localizedName), log: { Log.note($0) })
            defer { preview.stop() }
            if let name = cameraDevice?.localizedName, overlay { Log.output("overlay: caption's camera name \"\(name)\"") }
            if let cameraDevice {
                try await showCamera(preview, device: cameraDevice)
            } else {
                try await showPattern(preview)
            }
            if let writeback {
                let (size, rgb) = try preview.readBack()
                try Self.writePPM(writeback, size: size, rgb: rgb)
                Log.output("writeback \(writeback): \(size)")
            }
            Self.summary(preview)
        }
    }

    static func listDevices() throws {
        let cards = DRMDevice.cards()
        if cards.isEmpty { Log.output("no /dev/dri/card* (no KMS driver loaded)") }
        for card in cards {
            let device = try DRMDevice(path: card)
            Log.output("\(card): \(device.driver), \(device.isAtomic ? "atomic" : "legacy")\(device.hasWriteback ? ", writeback" : "")\(device.isMaster ? ", master" : "")")
            for c in try device.connectors() {
                let modes = c.modes.prefix(3).map(\.description).joined(separator: " ")
                Log.output("  connector \(c.name): \(c.isWriteback ? "writeback" : c.isConnected ? "connected" : "disconnected") \(modes)")
            }
            for p in try device.planes() {
                let formats = p.formats.map { FourCC.string($0) }.joined(separator: " ")
                let rotation = p.properties["rotation"]?.enums.keys.sorted().joined(separator: " ") ?? "none"
                Log.output("  plane \(p.id) \(p.kind.rawValue): \(formats); rotation: \(rotation)")
            }
        }
    }

    static func summary(_ preview: PreviewOutput) {
        let shown = preview.framesShown
        let perFrame = shown == 0 ? 0 : Double(preview.copies.copies) / Double(shown)
        Log.output(String(format: "preview: %@; %d frames shown (%d zero-copy, %d converted), %.2f copies per frame, %.3f ms CPU per frame",
                          preview.status.description, shown, preview.zeroCopyFrames, preview.convertedFrames, perFrame,
                          preview.cpuNanosecondsPerFrame / 1e6))
    }

    private func showCamera(_ preview: PreviewOutput, device: CaptureDevice) async throws {
        let requestedSize: PixelSize? = try size.map {
            guard let parsed = PixelSize(parsing: $0) else { throw UserFacingError("cannot read size \"\($0)\"; write WIDTHxHEIGHT") }
            return parsed
        }
        let chosen = try CameraChoice.applyFormat(device, format: try pixelFormat.map { try Options.fourcc($0, "--pixel-format") }, size: requestedSize)
        let session = CaptureSession(log: { Log.note($0) })
        let grab = VideoDataOutput(pixelFormat: .bgr888, convertsToRequestedFormat: true)
        session.beginConfiguration()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(preview)
        if saveFrame != nil { try session.addOutput(grab) }
        try session.setSessionPreset(chosen ? .inputPriority : .high)
        try session.commitConfiguration()
        try session.startRunning()
        defer { try? session.stopRunning() }
        let signals = SignalStop {}
        defer { signals.cancel() }
        let until = ContinuousClock.now + .checkedSeconds(duration)
        while ContinuousClock.now < until, signals.reason == nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        if let saveFrame {
            for await frame in grab.frames {
                try FrameFile.writePPM(saveFrame, frame: frame)
                Log.output("frame \(saveFrame): \(frame.size)")
                break
            }
        }
    }

    /// Frames from a second DRM client: an XRGB8888 dumb buffer it exports as
    /// a dmabuf, as another program (or a camera ISP) would hand one over.
    private func showPattern(_ preview: PreviewOutput) async throws {
        guard let size = PixelSize(parsing: patternSize) else { throw UserFacingError("cannot read --pattern-size \"\(patternSize)\"") }
        // The preview takes the display (and DRM master) first.
        preview.activate()
        let cards = device.map { [$0] } ?? DRMDevice.cards()
        guard let card = cards.first else { throw UserFacingError("no /dev/dri/card* for the pattern") }
        let client = try DRMDevice(path: card)
        if client.isMaster { _ = client.dropMaster() }
        let buffer = try client.dumbBuffer(size)
        Self.drawPattern(buffer)
        let dmabuf = try buffer.exportDmabuf()
        let plane = FramePlane(base: UnsafeRawPointer(buffer.mapping.base), stride: buffer.pitch, length: buffer.pitch * size.height)
        let end = Date().addingTimeInterval(duration)
        var sequence: UInt32 = 0
        while Date() < end {
            sequence += 1
            // Each frame keeps the buffer, its mapping and its dmabuf alive
            // until its last holder lets go: the display may still be
            // converting the last one after this loop has ended.
            preview.queue.push(VideoFrame(format: .xrgb8888, size: size, planes: [plane],
                                          dmabufs: [DmaBufPlane(fd: dmabuf.rawValue, offset: 0, length: buffer.pitch * size.height)],
                                          sequence: sequence, timestampNanoseconds: UInt64(Date().timeIntervalSince1970 * 1e9),
                                          release: { withExtendedLifetime((client, buffer, dmabuf)) {} }))
            try await Task.sleep(for: .milliseconds(33))
        }
    }

    /// Eight vertical colour bars over a grey ramp.
    static func drawPattern(_ buffer: DRMDevice.DumbBuffer) {
        let bars: [UInt32] = [0xFFFFFF, 0xFFFF00, 0x00FFFF, 0x00FF00, 0xFF00FF, 0xFF0000, 0x0000FF, 0x101010]
        for y in 0..<buffer.size.height {
            let row = (buffer.mapping.base + y * buffer.pitch).assumingMemoryBound(to: UInt32.self)
            for x in 0..<buffer.size.width {
                row[x] = y < buffer.size.height * 3 / 4 ? bars[x * 8 / buffer.size.width]
                    : UInt32(x * 255 / max(1, buffer.size.width - 1)) * 0x010101
            }
        }
    }

    static func writePPM(_ path: String, size: PixelSize, rgb: [UInt8]) throws {
        try FrameFile.writePPM(path, size: size, rgb: rgb)
    }

    /// The caption asked for (with the camera's name, as a recording's
    /// has it); nil without --overlay.
    func caption(cameraName: String?) -> OverlaySettings? {
        guard overlay else { return nil }
        var o = OverlaySettings()
        o.cameraName = cameraName
        o.text = overlayText ?? ""
        return o
    }
}

/// Frames as files, for checking what a command showed or recorded.
enum FrameFile {
    static func writePPM(_ path: String, size: PixelSize, rgb: [UInt8]) throws {
        var data = Data("P6\n\(size.width) \(size.height)\n255\n".utf8)
        data.append(contentsOf: rgb)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A BGR888 (bytes R, G, B) frame as PPM.
    static func writePPM(_ path: String, frame: VideoFrame) throws {
        guard frame.format == .bgr888 else { throw UserFacingError("cannot save a \(frame.format) frame as PPM") }
        let rgb = frame.withCPUAccess { planes -> [UInt8] in
            let row = frame.size.width * 3
            var out = [UInt8](repeating: 0, count: row * frame.size.height)
            out.withUnsafeMutableBytes { o in
                for y in 0..<frame.size.height { memcpy(o.baseAddress! + y * row, planes[0].base + y * planes[0].stride, row) }
            }
            return out
        }
        try writePPM(path, size: frame.size, rgb: rgb)
    }

}
