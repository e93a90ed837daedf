import Dispatch
import Foundation
import ObscuraCapture
import ObscuraMedia
import ObscuraOverlay
import ObscuraSystem
import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// The preview layer of a kiosk with no desktop: frames go straight to a
/// display plane through KMS.
///
/// Added to a session like any output. It shows the newest frame only and
/// never blocks the camera or a recorder (its queue keeps the latest frame;
/// a slow display just skips frames). The camera's dmabuf becomes the
/// framebuffer when a plane takes its format and layout (zero-copy);
/// otherwise the frame is converted into a small pool of dumb buffers and the
/// copy counted. With no display, or with another process holding DRM
/// master, it says so once and stays headless — recording is never blocked —
/// and tries again when a display is plugged in.
///
/// `@unchecked Sendable`: `display`, `reported` and `captioner` are touched
/// only on the `work` queue; `state` is a mutex; the flags are atomics; the
/// rest are `let`s.
public final class PreviewOutput: CaptureOutput, @unchecked Sendable {
    public let queue = FrameQueue(policy: .latestOnly)
    public var preferredPixelFormat: PixelFormat? { nil }
    /// Beside the queue's frame, one on screen and one being committed.
    public var extraHeldFrames: Int { 2 }

    public enum Status: Sendable, Equatable, CustomStringConvertible {
        case starting
        /// Card, connector and mode.
        case showing(String)
        case headless(String)
        public var description: String {
            switch self {
            case .starting: "starting"
            case .showing(let what): "showing on \(what)"
            case .headless(let why): "headless: \(why)"
            }
        }
    }

    public let devicePath: String?
    /// The connector to prefer (e.g. "HDMI-A-1"); the first connected one otherwise.
    public let connectorName: String?
    /// Frames on an overlay plane over the background (true) or on the primary plane.
    public let usesOverlay: Bool
    public let gravity: PreviewGravity
    /// Clockwise degrees: 0, 90, 180, 270.
    public let rotation: Int
    /// Where on the screen (nil: the whole screen).
    public let destination: PreviewRect?
    /// XRGB colour around the frame.
    public let backgroundColour: UInt32
    /// CPU copies of pixels made for the preview (conversions).
    public let copies = CopyCounter()
    private let log: @Sendable (String) -> Void
    private let state = Mutex<(status: Status, shown: Int, zeroCopy: Int, converted: Int, cpuNanoseconds: UInt64, failures: Int)>(
        (.starting, 0, 0, 0, 0, 0))
    private let work = DispatchQueue(label: "obscura.preview")
    private var display: Display?   // on `work`
    private var reported: String?   // on `work`
    /// Set by the hot-plug monitor's thread: look at the display again.
    private let replug = HotplugMonitor.Flag(false)
    private let stopped = Atomic<Bool>(false)
    private let hotplug: HotplugMonitor?

    /// The burned-in caption the preview shows too (drawn as the recorder
    /// draws it: in place when the preview is the frame's only output, else
    /// on a counted copy); nil: the camera's frames as they are.
    public let caption: OverlaySettings?
    private var captioner: FrameOverlay?   // on `work`

    public init(device: String? = nil, connector: String? = nil, overlay: Bool = true, gravity: PreviewGravity = .fit,
                rotation: Int = 0, destination: PreviewRect? = nil,
                backgroundColour: UInt32 = 0, caption: OverlaySettings? = nil,
                log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.caption = caption
        guard [0, 90, 180, 270].contains(rotation) else {
            throw PreviewError.unsupported("rotation \(rotation) is not one of 0, 90, 180, 270")
        }
        devicePath = device
        connectorName = connector
        usesOverlay = overlay
        self.gravity = gravity
        self.rotation = rotation
        self.destination = destination
        self.backgroundColour = backgroundColour
        self.log = log
        let replug = replug
        hotplug = HotplugMonitor { replug.on.store(true, ordering: .relaxed) }
        // The loop holds the output only while it shows a frame, so that
        // the output's deinit runs when its last user lets go (and closes
        // the queue, which ends the loop).
        Task.detached { [weak self, queue] in
            while true {
                let frame = await queue.next()
                guard let output = self, !output.stopped.load(ordering: .relaxed) else { return }
                if let frame { await output.show(frame) } else { try? await Task.sleep(for: .milliseconds(50)) }
            }
        }
    }

    deinit {
        stopped.store(true, ordering: .relaxed)
        queue.close()
        hotplug?.stop()
    }

    public var status: Status { state.withLock { $0.status } }
    public var framesShown: Int { state.withLock { $0.shown } }
    public var zeroCopyFrames: Int { state.withLock { $0.zeroCopy } }
    public var convertedFrames: Int { state.withLock { $0.converted } }
    /// CPU time the preview spent per shown frame (its thread), in nanoseconds.
    public var cpuNanosecondsPerFrame: Double {
        state.withLock { $0.shown == 0 ? 0 : Double($0.cpuNanoseconds) / Double($0.shown) }
    }

    /// Stops showing and lets the display go (the background stays lit).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        queue.close()
        work.sync {
            display?.stop()
            display = nil
        }
        hotplug?.stop()
    }

    /// The screen as the display shows it, read back through the writeback
    /// connector (vkms has one), as RGB bytes.
    public func readBack() throws -> (size: PixelSize, rgb: [UInt8]) {
        try work.sync {
            guard let display else { throw PreviewError.noDisplay("the preview is \(status)") }
            let (size, pixels) = try display.readBack()
            var rgb = [UInt8](repeating: 0, count: pixels.count * 3)
            for (i, p) in pixels.enumerated() {
                rgb[i * 3] = UInt8((p >> 16) & 0xff)
                rgb[i * 3 + 1] = UInt8((p >> 8) & 0xff)
                rgb[i * 3 + 2] = UInt8(p & 0xff)
            }
            return (size, rgb)
        }
    }

    /// One frame on the display (on `work`).
    private func show(_ frame: VideoFrame) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            work.async {
                self.present(frame)
                done.resume()
            }
        }
    }

    /// Opens the display now rather than with the first frame (and takes
    /// DRM master before another client of the card can).
    public func activate() {
        work.sync { _ = openIfNeeded() }
    }

    /// On `work`: a display, or headless (said once per reason).
    private func openIfNeeded() -> Bool {
        if replug.on.exchange(false, ordering: .relaxed) {
            // Something changed on a DRM device: if our display is gone or its
            // mode changed, pick again; a headless preview tries again.
            if let d = display {
                let now = (try? d.device.connectors())?.first { $0.id == d.connector.id }
                let preferred = now.flatMap { $0.modes.first(where: \.isPreferred) ?? $0.modes.first }
                if now?.isConnected != true || preferred?.description != d.mode.description {
                    log("the display changed (\(now.map { $0.isConnected ? "mode \(preferred?.description ?? "none")" : "disconnected" } ?? "gone")): picking again")
                    d.stop()
                    display = nil
                }
            }
            reported = nil
        }
        if display != nil { return true }
        if case .headless = status, reported != nil { return false }
        do {
            let d = try Display.open(path: devicePath, connector: connectorName, overlay: usesOverlay)
            try d.start(background: backgroundColour)
            display = d
            reported = nil
            state.withLock { $0.status = .showing(d.description) }
            log("preview on \(d.description)\(d.device.isAtomic ? "" : " (legacy modesetting)")")
            return true
        } catch {
            let why = "\(error)"
            state.withLock { $0.status = .headless(why) }
            if reported != why { log("preview off: \(why); recording goes on without it") }
            reported = why
            return false
        }
    }

    /// On `work`.
    private func present(_ camera: VideoFrame) {
        guard openIfNeeded() else { return }
        let before = Syscalls.threadCPUNanoseconds()
        do {
            var frame = camera
            if let caption {
                if captioner?.renderer.frameSize != frame.size {
                    captioner = try FrameOverlay(settings: caption, frameSize: frame.size, copies: copies)
                }
                frame = try captioner!.apply(frame)
            }
            let path = try display!.show(frame, gravity: gravity, rotation: rotation, area: destination, copies: copies)
            let spent = Syscalls.threadCPUNanoseconds() &- before
            state.withLock {
                $0.shown += 1
                $0.cpuNanoseconds &+= spent
                if path == .zeroCopy { $0.zeroCopy += 1 } else { $0.converted += 1 }
            }
        } catch {
            let count = state.withLock { s -> Int in
                s.failures += 1
                return s.failures
            }
            if count == 1 || count % 100 == 0 { log("preview frame not shown (\(count) so far): \(error)") }
        }
    }
}

/// Kernel uevents for DRM hot-plug (a display plugged in or out), read from
/// the kernel's netlink broadcast: no udev daemon needed. The preview then
/// checks whether its display is still connected in the same mode.
final class HotplugMonitor: Sendable {
    private let wakeup: Wakeup
    private let thread: JoinableThread
    final class Flag: Sendable {
        let on: Atomic<Bool>
        init(_ value: Bool) { on = Atomic(value) }
    }

    /// nil when the kernel's uevents cannot be read (the preview then only
    /// notices a display when it restarts).
    init?(_ changed: @escaping @Sendable () -> Void) {
        guard let socket = try? Syscalls.socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue), 15 /* NETLINK_KOBJECT_UEVENT */,
                                                what: "the kernel's uevents") else { return nil }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; u32 nl_pid; u32 nl_groups; }
        var address = [UInt8](repeating: 0, count: 12)
        address[0] = UInt8(AF_NETLINK & 0xff)
        address[8] = 1  // group 1: the kernel's uevents
        guard (try? Syscalls.bind(socket.rawValue, address: address, what: "the kernel's uevents")) != nil,
              let wakeup = try? Wakeup() else { return nil }
        self.wakeup = wakeup
        // The thread holds the socket and the callback, not the monitor.
        guard let thread = try? JoinableThread(name: "obscura-hotplug", {
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                guard let readable = try? wakeup.wait(for: socket.rawValue, timeout: nil), !wakeup.isSignalled else { return }
                guard readable else { continue }
                let n = (try? buffer.withUnsafeMutableBytes { b throws(SystemError) in
                    try Syscalls.receive(socket.rawValue, into: b, flags: Int32(MSG_DONTWAIT), what: "the kernel's uevents")
                }) ?? 0
                guard n > 0 else { continue }
                if Self.isDisplayHotplug(Array(buffer[0..<n])) { changed() }
            }
        }) else { return nil }
        self.thread = thread
    }

    /// A uevent is NUL-separated KEY=VALUE fields after a header line. A
    /// display plugged in or out is a "change" of a DRM device (HOTPLUG=1
    /// from the driver; a synthetic one from `echo change > …/uevent`).
    static func isDisplayHotplug(_ message: [UInt8]) -> Bool {
        let fields = message.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return fields.contains("SUBSYSTEM=drm") && fields.contains("ACTION=change")
    }

    /// Ends the thread (woken, joined); the socket closes with it.
    func stop() {
        wakeup.signal()
        thread.join()
    }

    deinit { stop() }
}
