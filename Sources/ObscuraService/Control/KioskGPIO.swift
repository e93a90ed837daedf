import Logging
import ObscuraGPIO
import ObscuraPhoto
import ObscuraSystem

/// The kiosk's buttons and LEDs as the board profile wires them: record,
/// photo and flash buttons (debounced, a short or long press each an
/// action), the record, status and flash LEDs, and the flash's output line.
/// A line that cannot be opened is said and left out; the rest work.
struct KioskGPIO: Sendable {
    private(set) var buttons: [Button] = []
    private(set) var recordLED: LED?
    private(set) var statusLED: LED?
    private(set) var flashLED: LED?
    private(set) var flash: GPIOFlash?
    /// Buttons that could not be opened, as the errors said.
    private(set) var problems: [String] = []

    /// What a press does.
    struct Actions: Sendable {
        let record: @Sendable () async -> Void
        let photo: @Sendable () async -> Void
        let flash: @Sendable () async -> Void
        /// A camera's own record button, by its line on the profile's chip.
        var cameraRecord: [(line: String, action: @Sendable () async -> Void)] = []
    }

    init() {}

    init(profile: BoardProfile, logger: Logger, actions: Actions) {
        guard let g = profile.gpio else {
            logger.notice("the board profile wires no GPIO: control through `obscura ctl`")
            return
        }
        addButton(g.line(g.recordButton), g, logger, actions.record)
        addButton(g.line(g.photoButton), g, logger, actions.photo)
        addButton(g.line(g.flashButton), g, logger, actions.flash)
        for (line, action) in actions.cameraRecord { addButton(g.line(line), g, logger, action) }
        func led(_ line: String?) -> LED? {
            guard let name = g.line(line) else { return nil }
            do { return try LED(name) } catch {
                logger.warning("LED \(name) unavailable: \(error)")
                return nil
            }
        }
        recordLED = led(g.recordLED)
        statusLED = led(g.statusLED)
        flashLED = led(g.flashLED)
        if let name = g.line(g.flashOutput) {
            do { flash = try GPIOFlash(name) } catch { logger.warning("flash \(name) unavailable: \(error)") }
        }
    }

    private mutating func addButton(_ name: GPIOLineName?, _ g: BoardProfile.GPIO, _ logger: Logger,
                                    _ action: @escaping @Sendable () async -> Void) {
        guard let name else { return }
        do {
            let b = try Button(name, activeLow: g.activeLowButtons, bias: g.bias, debounce: g.debounce, longPress: g.longPress)
            buttons.append(b)
            logger.info("button \(name): debounced by \(b.isKernelDebounced ? "the kernel" : "software") (\(g.debounce))")
            // A press acts as the button goes down (debounced), not when it
            // is let go: the recording holds the moment of the press. How
            // long it is held changes nothing.
            Task { [events = b.events] in
                for await event in events {
                    guard case .pressed(let t) = event else { continue }
                    logger.info("button \(name) pressed at \(String(printf: "%.6f", Double(t) / 1e9)) s (monotonic clock)")
                    await action()
                }
            }
        } catch {
            logger.warning("button \(name) unavailable: \(error)")
            problems.append("\(error)")
        }
    }

    /// The record and status LEDs for a state; `attention`: the picture
    /// has a condition (an error's pattern wins).
    func show(recording: Bool, error: Bool, attention: Bool = false) {
        recordLED?.show(recording ? .recording : .off)
        statusLED?.show(error ? .error : attention ? .attention : .on)
    }

    func show(flash mode: FlashMode) { flashLED?.show(mode.ledPattern) }

    func close() {
        for b in buttons { b.close() }
        for led in [recordLED, statusLED, flashLED] { led?.close() }
    }
}
