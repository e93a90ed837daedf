import ObscuraGPIO
import ObscuraMedia
import ObscuraPhoto

extension FlashMode {
    /// What the flash LED shows for the mode.
    public var ledPattern: LEDPattern {
        switch self {
        case .auto: .flashAuto
        case .on: .on
        case .off: .off
        }
    }
}

/// A flash (or torch) on a GPIO output line.
public final class GPIOFlash: FlashUnit, Sendable {
    private let line: GPIOLine

    public init(_ name: GPIOLineName) throws {
        line = try GPIOLine.output(name, initialValue: false)
    }

    public func on() throws { try line.set(true) }
    public func off() throws { try line.set(false) }

    deinit {
        try? line.set(false)
        line.release()
    }
}
