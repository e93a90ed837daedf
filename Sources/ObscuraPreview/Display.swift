import CFFmpeg
import CLibDRM
import ObscuraEncoding
import ObscuraConversion
import ObscuraMedia
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

public enum PreviewError: Error, CustomStringConvertible, Equatable {
    /// No usable display: why, per card.
    case noDisplay(String)
    /// Another process is DRM master (a desktop, another preview).
    case notMaster(String)
    case notImportable(String)
    case unsupported(String)

    public var description: String {
        switch self {
        case .noDisplay(let why): "no display for the preview: \(why)"
        case .notMaster(let card): "another process holds DRM master on \(card) (a desktop or another preview)"
        case .notImportable(let why): "cannot import the frame: \(why)"
        case .unsupported(let why): why
        }
    }
}

/// How a frame reached the screen.
public enum PreviewPath: String, Sendable {
    /// The camera's dmabuf is the framebuffer: no CPU copy.
    case zeroCopy = "zero-copy"
    /// Converted (format, scale, rotation) into a dumb buffer: counted copies.
    case converted
}

/// One display: a card, a connected connector in a mode, its CRTC, the
/// primary plane (showing the background) and an overlay plane for frames.
/// Not thread-safe: the preview serialises calls.
final class Display {
    let device: DRMDevice
    let connector: DRMDevice.Connector
    let mode: DRMDevice.Mode
    let crtc: UInt32
    let primary: DRMDevice.Plane
    let overlay: DRMDevice.Plane?
    let writeback: DRMDevice.Connector?
    private var background: DRMDevice.DumbBuffer?
    private var modeBlob: UInt32 = 0
    private var pool: [DRMDevice.DumbBuffer] = []
    private var poolIndex = 0
    private var cache: [String: DRMDevice.Framebuffer] = [:]
    /// Direct-path configurations the kernel refused (TEST_ONLY), by signature.
    private var refused: Set<String> = []
    private var scaler: OpaquePointer?
    private var rotated: [UInt32] = []
    private let staging = SwscaleStaging()
    /// What is on screen, held until the commit that replaces it returns.
    private var onScreen: (VideoFrame?, DRMDevice.Framebuffer?)
    private var primaryShowsFrame = false

    var description: String { "\(device.path) (\(device.driver)) \(connector.name) \(mode)" }
    var screen: PreviewRect { PreviewRect(x: 0, y: 0, width: mode.width, height: mode.height) }

    /// Opens the first card with a connected display (or `path`), as master.
    static func open(path: String?, connector wanted: String? = nil, overlay useOverlay: Bool = true) throws -> Display {
        let candidates = path.map { [$0] } ?? DRMDevice.cards()
        guard !candidates.isEmpty else { throw PreviewError.noDisplay("no /dev/dri/card* (no KMS driver loaded)") }
        var reasons: [String] = []
        var masterHeld: String?
        for card in candidates {
            let device: DRMDevice
            do { device = try DRMDevice(path: card) } catch { reasons.append("\(card): \(error)"); continue }
            let connectors: [DRMDevice.Connector]
            do { connectors = try device.connectors() } catch { reasons.append("\(card): \(error)"); continue }
            let usable = connectors.filter { $0.isConnected && !$0.isWriteback && !$0.modes.isEmpty }
            // The named connector when it is connected, else the first that is.
            guard let connector = usable.first(where: { $0.name == wanted }) ?? usable.first else {
                let listed = connectors.filter { !$0.isWriteback }.map { "\($0.name) \($0.isConnected ? "connected, no modes" : "disconnected")" }
                reasons.append("\(card) (\(device.driver)): no connected display\(listed.isEmpty ? "" : " (" + listed.joined(separator: ", ") + ")")")
                continue
            }
            guard device.becomeMaster() else {
                masterHeld = card
                continue
            }
            return try Display(device: device, connector: connector, connectors: connectors, useOverlay: useOverlay)
        }
        if let masterHeld { throw PreviewError.notMaster(masterHeld) }
        throw PreviewError.noDisplay(reasons.joined(separator: "; "))
    }

    private init(device: DRMDevice, connector: DRMDevice.Connector, connectors: [DRMDevice.Connector], useOverlay: Bool) throws {
        self.device = device
        self.connector = connector
        mode = connector.modes.first(where: \.isPreferred) ?? connector.modes[0]
        let crtcs = device.crtcs
        guard let index = crtcs.indices.first(where: { connector.possibleCRTCs & (1 << UInt32($0)) != 0 }) else {
            throw PreviewError.noDisplay("\(device.path): no CRTC can drive \(connector.name)")
        }
        crtc = crtcs[index]
        let planes = try device.planes().filter { $0.possibleCRTCs & (1 << UInt32(index)) != 0 }
        guard let primary = planes.first(where: { $0.kind == .primary }) else {
            throw PreviewError.noDisplay("\(device.path): no primary plane for CRTC \(crtc)")
        }
        self.primary = primary
        overlay = !useOverlay ? nil : planes.first { $0.kind == .overlay && $0.takes(.xrgb8888) } ?? planes.first { $0.kind == .overlay }
        writeback = device.hasWriteback ? connectors.first { $0.isWriteback && $0.possibleCRTCs & (1 << UInt32(index)) != 0 } : nil
    }

    deinit {
        if let scaler { sws_freeContext(scaler) }
        if modeBlob != 0 { device.destroyBlob(modeBlob) }
    }

    /// Lights the display: the mode, and the background on the primary plane.
    func start(background colour: UInt32) throws {
        let bg = try device.dumbBuffer(PixelSize(width: mode.width, height: mode.height))
        bg.fill(colour)
        background = bg
        if device.isAtomic {
            modeBlob = try device.modeBlob(mode)
            let r = try device.atomicRequest()
            r.set(connector.id, type: DRMObject.connector, "CRTC_ID", UInt64(crtc))
            r.set(crtc, type: DRMObject.crtc, "MODE_ID", UInt64(modeBlob))
            r.set(crtc, type: DRMObject.crtc, "ACTIVE", 1)
            setPlane(r, primary.id, fb: bg.framebuffer.id, source: screen, destination: screen)
            try r.commit(flags: DRMCommit.allowModeset)
        } else {
            var connectorID = connector.id
            var info = mode.info
            guard drmModeSetCrtc(device.rawDescriptor, crtc, bg.framebuffer.id, 0, 0, &connectorID, 1, &info) == 0 else {
                throw SystemError.errno("drmModeSetCrtc", "\(connector.name) \(mode)")
            }
        }
    }

    /// Turns the planes off (the background stays until the next master).
    func stop() {
        if device.isAtomic, let overlay, let r = try? device.atomicRequest() {
            r.set(overlay.id, type: DRMObject.plane, "FB_ID", 0)
            r.set(overlay.id, type: DRMObject.plane, "CRTC_ID", 0)
            try? r.commit(flags: 0)
        }
        onScreen = (nil, nil)
        cache.removeAll()
    }

    private func setPlane(_ r: DRMDevice.AtomicRequest, _ plane: UInt32, fb: UInt32, source: PreviewRect, destination: PreviewRect) {
        r.set(plane, type: DRMObject.plane, "FB_ID", UInt64(fb))
        r.set(plane, type: DRMObject.plane, "CRTC_ID", UInt64(crtc))
        r.set(plane, type: DRMObject.plane, "SRC_X", UInt64(source.x) << 16)
        r.set(plane, type: DRMObject.plane, "SRC_Y", UInt64(source.y) << 16)
        r.set(plane, type: DRMObject.plane, "SRC_W", UInt64(source.width) << 16)
        r.set(plane, type: DRMObject.plane, "SRC_H", UInt64(source.height) << 16)
        r.set(plane, type: DRMObject.plane, "CRTC_X", UInt64(destination.x))
        r.set(plane, type: DRMObject.plane, "CRTC_Y", UInt64(destination.y))
        r.set(plane, type: DRMObject.plane, "CRTC_W", UInt64(destination.width))
        r.set(plane, type: DRMObject.plane, "CRTC_H", UInt64(destination.height))
    }

    private static func rotationName(_ degrees: Int) -> String { "rotate-\(degrees)" }

    /// Shows one frame; the previous one is released once this commit is done.
    func show(_ frame: VideoFrame, gravity: PreviewGravity, rotation: Int, area: PreviewRect?, copies: CopyCounter) throws -> PreviewPath {
        let target = area ?? screen
        let (source, destination) = PreviewLayout.place(source: frame.size, rotation: rotation, in: target, gravity: gravity)
        if let overlay, device.isAtomic, !frame.dmabufs.isEmpty, overlay.takes(frame.format) {
            let rotationProperty = overlay.properties["rotation"]
            let rotationValue = rotationProperty?.enums[Self.rotationName(rotation)].map { UInt64(1) << $0 }
            let signature = "\(frame.format) \(frame.size) \(source) \(destination) \(rotation)"
            if (rotation == 0 || rotationValue != nil) && !refused.contains(signature) {
                do {
                    let fb = try framebuffer(for: frame)
                    let r = try device.atomicRequest()
                    setPlane(r, overlay.id, fb: fb.id, source: source, destination: destination)
                    if let rotationValue { r.set(overlay.id, type: DRMObject.plane, "rotation", rotationValue) }
                    if frame.format.info?.family == .yuv {
                        let encoding = frame.size.height >= 720 ? "ITU-R BT.709 YCbCr" : "ITU-R BT.601 YCbCr"
                        if let v = overlay.properties["COLOR_ENCODING"]?.enums[encoding] { r.set(overlay.id, type: DRMObject.plane, "COLOR_ENCODING", v) }
                        if let v = overlay.properties["COLOR_RANGE"]?.enums["YCbCr limited range"] { r.set(overlay.id, type: DRMObject.plane, "COLOR_RANGE", v) }
                    }
                    try r.commit(flags: DRMCommit.testOnly)
                    try r.commit(flags: 0)
                    onScreen = (frame, fb)
                    return .zeroCopy
                } catch {
                    // The plane refuses this (scaling, format, rotation): convert from now on.
                    refused.insert(signature)
                }
            }
        }
        try showConverted(frame, source: source, destination: destination, rotation: rotation, copies: copies)
        return .converted
    }

    /// Framebuffers are cached per camera buffer (the dmabuf's inode and offset).
    private func framebuffer(for frame: VideoFrame) throws -> DRMDevice.Framebuffer {
        let first = frame.dmabufs[0]
        let inode = (try? Syscalls.status(first.fd, path: "dmabuf")).map { UInt64($0.st_ino) } ?? UInt64(first.fd)
        let key = "\(inode):\(first.offset):\(frame.format.fourcc):\(frame.size):\(frame.planes.first?.stride ?? 0)"
        if let fb = cache[key] { return fb }
        let fb = try device.importFrame(frame)
        if cache.count > 32 { cache.removeAll() }
        cache[key] = fb
        return fb
    }

    private func showConverted(_ frame: VideoFrame, source: PreviewRect, destination: PreviewRect, rotation: Int,
                               copies: CopyCounter) throws {
        // Without an overlay the frame goes on the primary plane, full screen,
        // the background around it drawn into the same buffer.
        let onPrimary = overlay == nil || !device.isAtomic
        let bufferSize = onPrimary ? screen.size : destination.size
        if pool.first?.size != bufferSize {
            pool = try (0..<3).map { _ in try device.dumbBuffer(bufferSize) }
            if onPrimary, let colour = background.map({ $0.mapping.base.load(as: UInt32.self) }) { pool.forEach { $0.fill(colour) } }
        }
        poolIndex = (poolIndex + 1) % pool.count
        let buffer = pool[poolIndex]
        let inBuffer = onPrimary ? destination : PreviewRect(x: 0, y: 0, width: destination.width, height: destination.height)
        try convert(frame, crop: source, into: buffer, at: inBuffer, rotation: rotation, copies: copies)
        if device.isAtomic {
            let r = try device.atomicRequest()
            if onPrimary {
                setPlane(r, primary.id, fb: buffer.framebuffer.id, source: screen, destination: screen)
                primaryShowsFrame = true
            } else {
                setPlane(r, overlay!.id, fb: buffer.framebuffer.id, source: PreviewRect(x: 0, y: 0, width: bufferSize.width, height: bufferSize.height),
                         destination: destination)
            }
            try r.commit(flags: 0)
        } else {
            var connectorID = connector.id
            var info = mode.info
            guard drmModeSetCrtc(device.rawDescriptor, crtc, buffer.framebuffer.id, 0, 0, &connectorID, 1, &info) == 0 else {
                throw SystemError.errno("drmModeSetCrtc", "\(connector.name)")
            }
        }
        onScreen = (nil, nil)
    }

    /// Format conversion and scaling with swscale straight into the buffer
    /// (one copy); a rotation the plane cannot do is a second copy.
    private func convert(_ frame: VideoFrame, crop: PreviewRect, into buffer: DRMDevice.DumbBuffer, at rect: PreviewRect,
                         rotation: Int, copies: CopyCounter) throws {
        guard let info = frame.format.info, let name = info.ffmpegName else {
            throw PreviewError.unsupported("the preview cannot convert \(frame.format) frames")
        }
        let turned = rotation % 180 != 0
        let outW = turned ? rect.height : rect.width, outH = turned ? rect.width : rect.height
        scaler = sws_getCachedContext(scaler, Int32(crop.width), Int32(crop.height), av_get_pix_fmt(name),
                                      Int32(outW), Int32(outH), AV_PIX_FMT_BGR0, Int32(SWS_BILINEAR), nil, nil, nil)
        guard let scaler else { throw PreviewError.unsupported("sws_getCachedContext failed for \(frame.format) → XRGB8888") }
        var rows: Int32 = 0
        try frame.withCPUAccess { planes in
            var src: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
            var srcStride: [Int32] = [0, 0, 0, 0]
            for (i, plane) in planes.enumerated() where i < 4 && i < info.planes.count {
                let p = info.planes[i]
                let offset = (crop.y / p.verticalSubsampling) * plane.stride
                    + (crop.x / p.horizontalSubsampling) / p.pixelsPerGroup * p.bytesPerGroup
                src[i] = (plane.base + offset).assumingMemoryBound(to: UInt8.self)
                srcStride[i] = Int32(plane.stride)
            }
            if rotation % 360 == 0 {
                var dst: [UnsafeMutablePointer<UInt8>?] = [(buffer.mapping.base + rect.y * buffer.pitch + rect.x * 4).assumingMemoryBound(to: UInt8.self), nil, nil, nil]
                var dstStride: [Int32] = [Int32(buffer.pitch), 0, 0, 0]
                let (written, staged) = staging.scale(scaler, format: av_get_pix_fmt(name), width: crop.width, height: crop.height,
                                                      source: src, strides: srcStride, destination: &dst, destinationStrides: &dstStride)
                rows = written
                copies.recordCopy(bytes: outW * outH * 4 + staged)
            } else {
                if rotated.count != outW * outH { rotated = [UInt32](repeating: 0, count: outW * outH) }
                var stagedBytes = 0
                try rotated.withUnsafeMutableBufferPointer { temp in
                    var dst: [UnsafeMutablePointer<UInt8>?] = [UnsafeMutableRawPointer(temp.baseAddress!).assumingMemoryBound(to: UInt8.self), nil, nil, nil]
                    var dstStride: [Int32] = [Int32(outW * 4), 0, 0, 0]
                    let (written, staged) = staging.scale(scaler, format: av_get_pix_fmt(name), width: crop.width, height: crop.height,
                                                          source: src, strides: srcStride, destination: &dst, destinationStrides: &dstStride)
                    rows = written
                    stagedBytes = staged
                    guard rows > 0 else { throw PreviewError.unsupported("sws_scale failed: \(rows)") }
                    Self.rotate(temp, width: outW, height: outH, by: rotation, into: buffer, at: rect)
                }
                copies.recordCopy(bytes: outW * outH * 4 + stagedBytes)
                copies.recordCopy(bytes: outW * outH * 4)
            }
        }
        if rows <= 0 { throw PreviewError.unsupported("sws_scale failed for \(frame.format) \(crop) → \(rect): \(rows)") }
    }

    /// Clockwise rotation of a `width`×`height` XRGB image into `rect`.
    static func rotate(_ source: UnsafeMutableBufferPointer<UInt32>, width: Int, height: Int, by rotation: Int,
                       into buffer: DRMDevice.DumbBuffer, at rect: PreviewRect) {
        let r = ((rotation % 360) + 360) % 360
        for dy in 0..<rect.height {
            let row = (buffer.mapping.base + (rect.y + dy) * buffer.pitch + rect.x * 4).assumingMemoryBound(to: UInt32.self)
            for dx in 0..<rect.width {
                let (sx, sy): (Int, Int) = switch r {
                case 90: (dy, height - 1 - dx)
                case 180: (width - 1 - dx, height - 1 - dy)
                default: (width - 1 - dy, dx)  // 270
                }
                row[dx] = source[sy * width + sx]
            }
        }
    }

    /// The composed screen read back through the writeback connector, as
    /// XRGB8888 rows (tightly packed).
    func readBack() throws -> (PixelSize, [UInt32]) {
        guard let writeback else {
            throw PreviewError.unsupported("\(device.path) (\(device.driver)) offers no writeback connector to read the screen back")
        }
        let buffer = try device.dumbBuffer(screen.size)
        buffer.fill(0)
        var fence: Int32 = -1
        let r = try device.atomicRequest()
        r.set(writeback.id, type: DRMObject.connector, "CRTC_ID", UInt64(crtc))
        r.set(writeback.id, type: DRMObject.connector, "WRITEBACK_FB_ID", UInt64(buffer.framebuffer.id))
        try withUnsafeMutablePointer(to: &fence) { pointer in
            r.set(writeback.id, type: DRMObject.connector, "WRITEBACK_OUT_FENCE_PTR", UInt64(UInt(bitPattern: pointer)))
            try r.commit(flags: DRMCommit.allowModeset)
        }
        if fence >= 0 {
            let owned = OwnedFileDescriptor(adopting: fence)
            var p = [pollfd(fd: owned.rawValue, events: Int16(POLLIN), revents: 0)]
            // The writeback is done when its fence signals; not within two
            // seconds, and what the buffer holds is not this frame.
            guard try Syscalls.poll(&p, milliseconds: 2000, what: "the writeback's fence") > 0 else {
                throw SystemError(call: "poll", code: ETIMEDOUT, detail: "the writeback's fence did not signal within 2 s")
            }
        }
        var pixels = [UInt32](repeating: 0, count: screen.width * screen.height)
        for y in 0..<screen.height {
            let row = (buffer.mapping.base + y * buffer.pitch).assumingMemoryBound(to: UInt32.self)
            for x in 0..<screen.width { pixels[y * screen.width + x] = row[x] & 0xFFFFFF }
        }
        return (screen.size, pixels)
    }
}
