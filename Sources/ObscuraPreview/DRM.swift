import struct Synchronization.Atomic
import CLibDRM
import Foundation
import ObscuraMedia
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// A DRM/KMS device (/dev/dri/cardN) opened by one owner. Everything here is
/// plain libdrm; errors name the call that failed.
public final class DRMDevice: Sendable {
    public let path: String
    let fd: OwnedFileDescriptor
    public let driver: String
    /// Whether atomic modesetting is available (else the legacy API is used).
    public let isAtomic: Bool
    /// Whether the kernel hands writeback connectors to this client.
    public let hasWriteback: Bool

    public init(path: String) throws {
        self.path = path
        fd = try Syscalls.open(path, O_RDWR)
        guard drmSetClientCap(fd.rawValue, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1) == 0 else {
            throw SystemError.errno("drmSetClientCap(UNIVERSAL_PLANES)", path)
        }
        isAtomic = drmSetClientCap(fd.rawValue, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
        hasWriteback = isAtomic && drmSetClientCap(fd.rawValue, UInt64(DRM_CLIENT_CAP_WRITEBACK_CONNECTORS), 1) == 0
        if let version = drmGetVersion(fd.rawValue) {
            driver = version.pointee.name.map { String(cString: $0) } ?? "?"
            drmFreeVersion(version)
        } else {
            driver = "?"
        }
    }

    public var rawDescriptor: Int32 { fd.rawValue }

    /// Whether this client is DRM master (may change modes and planes).
    public var isMaster: Bool { drmIsMaster(fd.rawValue) != 0 }

    /// Tries to become master (when nobody else is).
    public func becomeMaster() -> Bool { isMaster || drmSetMaster(fd.rawValue) == 0 }

    /// Gives master up (a client that only shares buffers needs none).
    public func dropMaster() -> Bool { drmDropMaster(fd.rawValue) == 0 }

    /// Every /dev/dri/card* path, in order.
    public static func cards() -> [String] {
        let names = ((try? Syscalls.folderEntries("/dev/dri")) ?? []).filter { $0.hasPrefix("card") }.map { "/dev/dri/" + $0 }
        return names.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
    }

    // MARK: Objects

    public struct Mode: Sendable, CustomStringConvertible {
        public let width: Int
        public let height: Int
        public let refresh: Int
        public let isPreferred: Bool
        let info: drmModeModeInfo
        public var description: String { "\(width)x\(height)@\(refresh)" }
    }

    public struct Connector: Sendable {
        public let id: UInt32
        public let name: String
        public let isConnected: Bool
        public let isWriteback: Bool
        public let modes: [Mode]
        /// Bit i: CRTC index i can drive it.
        public let possibleCRTCs: UInt32
    }

    public enum PlaneKind: String, Sendable { case overlay, primary, cursor }

    public struct Plane: Sendable {
        public let id: UInt32
        public let kind: PlaneKind
        public let formats: [UInt32]
        public let possibleCRTCs: UInt32
        public let properties: [String: Property]
        public func takes(_ format: PixelFormat) -> Bool { formats.contains(format.fourcc) }
    }

    public struct Property: Sendable {
        public let id: UInt32
        public let value: UInt64
        /// Enum and bitmask values by name.
        public let enums: [String: UInt64]
    }

    public var crtcs: [UInt32] {
        guard let res = drmModeGetResources(fd.rawValue) else { return [] }
        defer { drmModeFreeResources(res) }
        return (0..<Int(res.pointee.count_crtcs)).map { res.pointee.crtcs[$0] }
    }

    public func connectors() throws -> [Connector] {
        guard let res = drmModeGetResources(fd.rawValue) else { throw SystemError.errno("drmModeGetResources", path) }
        defer { drmModeFreeResources(res) }
        var list: [Connector] = []
        for i in 0..<Int(res.pointee.count_connectors) {
            guard let c = drmModeGetConnector(fd.rawValue, res.pointee.connectors[i]) else { continue }
            defer { drmModeFreeConnector(c) }
            let type = c.pointee.connector_type
            let typeName = drmModeGetConnectorTypeName(type).map { String(cString: $0) } ?? "Unknown"
            var possible: UInt32 = 0
            for e in 0..<Int(c.pointee.count_encoders) {
                if let encoder = drmModeGetEncoder(fd.rawValue, c.pointee.encoders[e]) {
                    possible |= encoder.pointee.possible_crtcs
                    drmModeFreeEncoder(encoder)
                }
            }
            let modes = (0..<Int(c.pointee.count_modes)).map { m -> Mode in
                let info = c.pointee.modes[m]
                return Mode(width: Int(info.hdisplay), height: Int(info.vdisplay), refresh: Int(info.vrefresh),
                            isPreferred: info.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0, info: info)
            }
            list.append(Connector(id: c.pointee.connector_id, name: "\(typeName)-\(c.pointee.connector_type_id)",
                                  isConnected: c.pointee.connection == DRM_MODE_CONNECTED,
                                  isWriteback: type == UInt32(DRM_MODE_CONNECTOR_WRITEBACK),
                                  modes: modes, possibleCRTCs: possible))
        }
        return list
    }

    public func planes() throws -> [Plane] {
        guard let res = drmModeGetPlaneResources(fd.rawValue) else { throw SystemError.errno("drmModeGetPlaneResources", path) }
        defer { drmModeFreePlaneResources(res) }
        var list: [Plane] = []
        for i in 0..<Int(res.pointee.count_planes) {
            guard let p = drmModeGetPlane(fd.rawValue, res.pointee.planes[i]) else { continue }
            defer { drmModeFreePlane(p) }
            let props = properties(of: p.pointee.plane_id, type: UInt32(DRM_MODE_OBJECT_PLANE))
            let kind: PlaneKind = switch props["type"]?.value {
            case UInt64(DRM_PLANE_TYPE_PRIMARY): .primary
            case UInt64(DRM_PLANE_TYPE_CURSOR): .cursor
            default: .overlay
            }
            list.append(Plane(id: p.pointee.plane_id, kind: kind,
                              formats: (0..<Int(p.pointee.count_formats)).map { p.pointee.formats[$0] },
                              possibleCRTCs: p.pointee.possible_crtcs, properties: props))
        }
        return list
    }

    /// Property ids by object and name, looked up once (ids never change).
    private let propertyIDs = Mutex<[UInt32: [String: UInt32]]>([:])

    func propertyID(_ object: UInt32, type: UInt32, _ name: String) -> UInt32? {
        propertyIDs.withLock { ids in
            if ids[object] == nil { ids[object] = properties(of: object, type: type).mapValues(\.id) }
            return ids[object]?[name]
        }
    }

    public func properties(of object: UInt32, type: UInt32) -> [String: Property] {
        guard let props = drmModeObjectGetProperties(fd.rawValue, object, type) else { return [:] }
        defer { drmModeFreeObjectProperties(props) }
        var result: [String: Property] = [:]
        for i in 0..<Int(props.pointee.count_props) {
            guard let prop = drmModeGetProperty(fd.rawValue, props.pointee.props[i]) else { continue }
            defer { drmModeFreeProperty(prop) }
            let name = withUnsafeBytes(of: prop.pointee.name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            var enums: [String: UInt64] = [:]
            for e in 0..<Int(prop.pointee.count_enums) {
                let entry = prop.pointee.enums[e]
                let label = withUnsafeBytes(of: entry.name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                enums[label] = entry.value
            }
            result[name] = Property(id: prop.pointee.prop_id, value: props.pointee.prop_values[i], enums: enums)
        }
        return result
    }

    // MARK: Buffers

    /// A framebuffer object; removed (and its GEM handles closed) on release.
    public final class Framebuffer: Sendable {
        public let id: UInt32
        let device: DRMDevice
        let handles: [UInt32]
        init(id: UInt32, device: DRMDevice, handles: [UInt32]) {
            self.id = id
            self.device = device
            self.handles = handles
        }
        deinit {
            drmModeRmFB(device.fd.rawValue, id)
            for h in Set(handles) where h != 0 { drmCloseBufferHandle(device.fd.rawValue, h) }
        }
    }

    /// Imports a frame's dmabuf planes (PRIME fd → GEM handle) as a framebuffer
    /// in the frame's own format: no pixel is copied.
    public func importFrame(_ frame: VideoFrame) throws -> Framebuffer {
        guard let info = frame.format.info, !frame.dmabufs.isEmpty else {
            throw PreviewError.notImportable("the frame has no dmabuf")
        }
        var handles = [UInt32](repeating: 0, count: 4)
        var pitches = [UInt32](repeating: 0, count: 4)
        var offsets = [UInt32](repeating: 0, count: 4)
        var modifiers = [UInt64](repeating: 0, count: 4)
        var imported: [UInt32] = []
        for p in 0..<min(info.planes.count, 4) {
            // One dmabuf for every plane, or one each.
            let dmabuf = p < frame.dmabufs.count ? frame.dmabufs[p] : frame.dmabufs[0]
            var handle: UInt32 = 0
            guard drmPrimeFDToHandle(fd.rawValue, dmabuf.fd, &handle) == 0 else {
                for h in imported { drmCloseBufferHandle(fd.rawValue, h) }
                throw SystemError.errno("drmPrimeFDToHandle", "dmabuf fd \(dmabuf.fd)")
            }
            imported.append(handle)
            handles[p] = handle
            pitches[p] = UInt32(frame.planes[p].stride)
            if p < frame.dmabufs.count && frame.dmabufs.count > 1 {
                offsets[p] = UInt32(dmabuf.offset)
            } else {
                // Planes in one buffer: each after the previous.
                offsets[p] = UInt32(frame.dmabufs[0].offset + (0..<p).reduce(0) { $0 + frame.planes[$1].length })
            }
            modifiers[p] = frame.format.modifier
        }
        var id: UInt32 = 0
        let rc = drmModeAddFB2WithModifiers(fd.rawValue, UInt32(frame.size.width), UInt32(frame.size.height), frame.format.fourcc,
                                             handles, pitches, offsets, frame.format.modifier != 0 ? modifiers : nil, &id,
                                             frame.format.modifier != 0 ? UInt32(DRM_MODE_FB_MODIFIERS) : 0)
        guard rc == 0 else {
            let error = SystemError(call: "drmModeAddFB2", code: -rc == 0 ? errno : -rc,
                                    detail: "\(frame.format) \(frame.size) from dmabuf fd \(frame.dmabufs[0].fd)")
            for h in imported { drmCloseBufferHandle(fd.rawValue, h) }
            throw error
        }
        return Framebuffer(id: id, device: self, handles: imported)
    }

    /// A CPU-writable buffer (a "dumb" buffer) with a framebuffer on it.
    ///
    /// `@unchecked Sendable`: every stored property is a `let`; whoever writes
    /// the mapped pixels owns the buffer while doing so (the display's one thread).
    public final class DumbBuffer: @unchecked Sendable {
        public let size: PixelSize
        public let format: PixelFormat
        public let pitch: Int
        public let mapping: MemoryMapping
        public let framebuffer: Framebuffer
        let handle: UInt32
        let device: DRMDevice

        init(device: DRMDevice, size: PixelSize, format: PixelFormat) throws {
            self.device = device
            self.size = size
            self.format = format
            let bpp: UInt32 = format == .rgb565 ? 16 : 32
            var handle: UInt32 = 0, pitch: UInt32 = 0, length: UInt64 = 0
            guard drmModeCreateDumbBuffer(device.fd.rawValue, UInt32(size.width), UInt32(size.height), bpp, 0,
                                          &handle, &pitch, &length) == 0 else {
                throw SystemError.errno("drmModeCreateDumbBuffer", "\(size) \(bpp) bpp")
            }
            self.handle = handle
            self.pitch = Int(pitch)
            var offset: UInt64 = 0
            guard drmModeMapDumbBuffer(device.fd.rawValue, handle, &offset) == 0 else {
                drmModeDestroyDumbBuffer(device.fd.rawValue, handle)
                throw SystemError.errno("drmModeMapDumbBuffer", "\(size)")
            }
            mapping = try MemoryMapping(fd: device.fd.rawValue, offset: Int(offset), length: Int(length), writable: true)
            var handles: [UInt32] = [handle, 0, 0, 0]
            var pitches: [UInt32] = [pitch, 0, 0, 0]
            var offsets: [UInt32] = [0, 0, 0, 0]
            var id: UInt32 = 0
            guard drmModeAddFB2(device.fd.rawValue, UInt32(size.width), UInt32(size.height), format.fourcc,
                                &handles, &pitches, &offsets, &id, 0) == 0 else {
                drmModeDestroyDumbBuffer(device.fd.rawValue, handle)
                throw SystemError.errno("drmModeAddFB2", "dumb \(format) \(size)")
            }
            framebuffer = Framebuffer(id: id, device: device, handles: [])
        }

        /// Fills with one XRGB colour.
        public func fill(_ colour: UInt32) {
            for y in 0..<size.height {
                let row = (mapping.base + y * pitch).assumingMemoryBound(to: UInt32.self)
                for x in 0..<size.width { row[x] = colour }
            }
        }

        /// The buffer as a dmabuf (PRIME export), for handing to another client.
        public func exportDmabuf() throws -> OwnedFileDescriptor {
            var out: Int32 = -1
            guard drmPrimeHandleToFD(device.fd.rawValue, handle, UInt32(O_CLOEXEC | O_RDWR), &out) == 0 else {
                throw SystemError.errno("drmPrimeHandleToFD", "dumb \(size)")
            }
            return OwnedFileDescriptor(adopting: out)
        }

        deinit {
            drmModeDestroyDumbBuffer(device.fd.rawValue, handle)
        }
    }

    public func dumbBuffer(_ size: PixelSize, format: PixelFormat = .xrgb8888) throws -> DumbBuffer {
        try DumbBuffer(device: self, size: size, format: format)
    }

    // MARK: Atomic commits

    /// One atomic request, by object and property name.
    public final class AtomicRequest {
        let request: OpaquePointer
        let device: DRMDevice

        init(device: DRMDevice) throws {
            guard let r = drmModeAtomicAlloc() else { throw SystemError.errno("drmModeAtomicAlloc") }
            request = r
            self.device = device
        }

        deinit { drmModeAtomicFree(request) }

        /// Sets `name` on an object; returns false when the object lacks it.
        @discardableResult
        public func set(_ object: UInt32, type: UInt32, _ name: String, _ value: UInt64) -> Bool {
            guard let id = device.propertyID(object, type: type, name) else { return false }
            return drmModeAtomicAddProperty(request, object, id, value) >= 0
        }

        public func commit(flags: UInt32) throws {
            let rc = drmModeAtomicCommit(device.fd.rawValue, request, flags, nil)
            if rc != 0 { throw SystemError(call: "drmModeAtomicCommit", code: errno, detail: device.path) }
        }
    }

    public func atomicRequest() throws -> AtomicRequest { try AtomicRequest(device: self) }

    /// A mode as a property blob (for a CRTC's MODE_ID).
    public func modeBlob(_ mode: Mode) throws -> UInt32 {
        var info = mode.info
        var id: UInt32 = 0
        guard drmModeCreatePropertyBlob(fd.rawValue, &info, MemoryLayout<drmModeModeInfo>.size, &id) == 0 else {
            throw SystemError.errno("drmModeCreatePropertyBlob", "mode \(mode)")
        }
        return id
    }

    public func destroyBlob(_ id: UInt32) { drmModeDestroyPropertyBlob(fd.rawValue, id) }
}

public enum DRMObject {
    public static let crtc = UInt32(DRM_MODE_OBJECT_CRTC)
    public static let connector = UInt32(DRM_MODE_OBJECT_CONNECTOR)
    public static let plane = UInt32(DRM_MODE_OBJECT_PLANE)
}

public enum DRMCommit {
    public static let testOnly = UInt32(DRM_MODE_ATOMIC_TEST_ONLY)
    public static let allowModeset = UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET)
    public static let nonBlocking = UInt32(DRM_MODE_ATOMIC_NONBLOCK)
}
