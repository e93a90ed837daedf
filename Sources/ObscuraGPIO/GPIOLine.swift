import CGPIO
import ObscuraSystem
@_exported import ObscuraSettings
#if canImport(Glibc)
import Glibc
#endif

/// An edge seen on an input line, with the kernel's timestamp.
public struct GPIOEdge: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case rising, falling }
    public let kind: Kind
    /// CLOCK_MONOTONIC nanoseconds, from the kernel.
    public let timestampNanoseconds: UInt64
}

public enum GPIOEdgeDetection: Int32, Sendable { case none = 0, rising = 1, falling = 2, both = 3 }

/// A requested GPIO line. It owns its kernel request (and descriptor) and
/// releases it on `release()` or deinit. Each call holds the request for
/// its length, so a release waits for a call in progress; a thread that
/// polls `descriptor` is joined before the line is released.
public final class GPIOLine: Sendable {
    public let name: GPIOLineName
    private let request: Mutex<Request?>

    /// libgpiod's request. `@unchecked Sendable` (for the pointer): used only
    /// under `request`'s lock.
    private struct Request: @unchecked Sendable {
        let handle: OpaquePointer
    }

    /// The libgpiod API the shim was built against (1 or 2).
    public static var libgpiodAPIVersion: Int { Int(og_api_version()) }

    private init(name: GPIOLineName, handle: OpaquePointer) {
        self.name = name
        request = Mutex(Request(handle: handle))
    }

    /// Runs `body` with the request, or throws EBADF naming `call` once released.
    private func with<R>(_ call: String, _ body: (OpaquePointer) throws -> R) throws -> R {
        try request.withLock { r in
            guard let handle = r?.handle else { throw SystemError(call: call, code: EBADF, detail: "\(name) released") }
            return try body(handle)
        }
    }

    /// Where a line is: its chip's device and its offset, without requesting it.
    public static func locate(_ name: GPIOLineName) throws -> (path: String, offset: UInt32) {
        var path = [CChar](repeating: 0, count: 256)
        var offset: UInt32 = 0
        try ShimError.check("og_find_line") { og_find_line(name.chip, name.line, &path, path.count, &offset, $0, $1) }
        return (path.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, offset)
    }

    /// Requests an input line with edge detection.
    public static func input(_ name: GPIOLineName, edges: GPIOEdgeDetection = .both, bias: GPIOBias = .asIs,
                             activeLow: Bool = false, debounceMicroseconds: UInt32 = 0,
                             consumer: String = "obscura") throws -> GPIOLine {
        let (path, offset) = try locate(name)
        var config = og_input_config(edge: edges.rawValue, bias: bias.rawValue, active_low: activeLow ? 1 : 0,
                                     debounce_us: debounceMicroseconds)
        var handle: OpaquePointer?
        try ShimError.check("og_request_input") { og_request_input(path, offset, consumer, &config, &handle, $0, $1) }
        return GPIOLine(name: name, handle: handle!)
    }

    /// Requests an output line.
    public static func output(_ name: GPIOLineName, activeLow: Bool = false, initialValue: Bool = false,
                              consumer: String = "obscura") throws -> GPIOLine {
        let (path, offset) = try locate(name)
        var handle: OpaquePointer?
        try ShimError.check("og_request_output") {
            og_request_output(path, offset, consumer, activeLow ? 1 : 0, initialValue ? 1 : 0, &handle, $0, $1)
        }
        return GPIOLine(name: name, handle: handle!)
    }

    /// Whether the kernel debounces this line (libgpiod v2 with a period).
    public var isKernelDebounced: Bool { request.withLock { $0.map { og_line_debounced($0.handle) != 0 } ?? false } }

    public func value() throws -> Bool {
        try with("og_get_value") { handle in try ShimError.check("og_get_value") { og_get_value(handle, $0, $1) } != 0 }
    }

    public func set(_ value: Bool) throws {
        try with("og_set_value") { handle in
            _ = try ShimError.check("og_set_value") { og_set_value(handle, value ? 1 : 0, $0, $1) }
        }
    }

    /// The descriptor edge events arrive on (readable when one is pending),
    /// for a poll beside other descriptors; nil once released.
    public var descriptor: Int32? { request.withLock { $0.map { og_line_fd($0.handle) } } }

    /// The edge events pending now (call when `descriptor` is readable).
    public func readEdges() throws -> [GPIOEdge] {
        try with("og_read") { handle in
            var events = [og_event](repeating: og_event(), count: 16)
            let count = try ShimError.check("og_read") { og_read(handle, &events, 16, $0, $1) }
            return events.prefix(Int(count)).map {
                GPIOEdge(kind: $0.rising != 0 ? .rising : .falling, timestampNanoseconds: $0.timestamp_ns)
            }
        }
    }

    /// Waits up to `timeout` for edges and returns those pending (empty on timeout).
    /// Blocks the calling thread: never call it on Swift's cooperative pool.
    public func waitForEdges(timeout: Duration) throws -> [GPIOEdge] {
        let ns = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let ready = try with("og_wait") { handle in try ShimError.check("og_wait") { og_wait(handle, ns, $0, $1) } }
        guard ready > 0 else { return [] }
        return try readEdges()
    }

    public func release() {
        request.withLock { r in
            if let handle = r?.handle { og_release(handle) }
            r = nil
        }
    }

    deinit { release() }
}
