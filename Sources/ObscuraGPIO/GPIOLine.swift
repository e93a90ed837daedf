import CGPIO
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// A GPIO line named by its chip's label and its own name — never by number,
/// since boards renumber their chips (Pi 5 moved its header from gpiochip4 to
/// gpiochip0).
public struct GPIOLineName: Sendable, Hashable, CustomStringConvertible {
    public let chip: String
    public let line: String
    public init(chip: String, line: String) {
        self.chip = chip
        self.line = line
    }
    public var description: String { "\(chip)/\(line)" }
}

/// An edge seen on an input line, with the kernel's timestamp.
public struct GPIOEdge: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case rising, falling }
    public let kind: Kind
    /// CLOCK_MONOTONIC nanoseconds, from the kernel.
    public let timestampNanoseconds: UInt64
}

public enum GPIOBias: Int32, Sendable { case asIs = 0, disabled = 1, pullUp = 2, pullDown = 3 }
public enum GPIOEdgeDetection: Int32, Sendable { case none = 0, rising = 1, falling = 2, both = 3 }

/// A requested GPIO line. It owns its kernel request (and descriptor) and
/// releases it on `release()` or deinit. Used by one task at a time.
public final class GPIOLine: @unchecked Sendable {
    public let name: GPIOLineName
    private var handle: OpaquePointer?

    /// The libgpiod API the shim was built against (1 or 2).
    public static var libgpiodAPIVersion: Int { Int(og_api_version()) }

    private init(name: GPIOLineName, handle: OpaquePointer) {
        self.name = name
        self.handle = handle
    }

    static func locate(_ name: GPIOLineName) throws -> (path: String, offset: UInt32) {
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
    public var isKernelDebounced: Bool { handle.map { og_line_debounced($0) != 0 } ?? false }

    public func value() throws -> Bool {
        guard let handle else { throw SystemError(call: "og_get_value", code: EBADF, detail: "\(name) released") }
        return try ShimError.check("og_get_value") { og_get_value(handle, $0, $1) } != 0
    }

    public func set(_ value: Bool) throws {
        guard let handle else { throw SystemError(call: "og_set_value", code: EBADF, detail: "\(name) released") }
        try ShimError.check("og_set_value") { og_set_value(handle, value ? 1 : 0, $0, $1) }
    }

    /// Waits up to `timeout` for edges and returns those pending (empty on timeout).
    public func waitForEdges(timeout: Duration) throws -> [GPIOEdge] {
        guard let handle else { throw SystemError(call: "og_wait", code: EBADF, detail: "\(name) released") }
        let ns = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let ready = try ShimError.check("og_wait") { og_wait(handle, ns, $0, $1) }
        guard ready > 0 else { return [] }
        var events = [og_event](repeating: og_event(), count: 16)
        let count = try ShimError.check("og_read") { og_read(handle, &events, 16, $0, $1) }
        return events.prefix(Int(count)).map {
            GPIOEdge(kind: $0.rising != 0 ? .rising : .falling, timestampNanoseconds: $0.timestamp_ns)
        }
    }

    public func release() {
        if let handle { og_release(handle) }
        handle = nil
    }

    deinit { release() }
}
