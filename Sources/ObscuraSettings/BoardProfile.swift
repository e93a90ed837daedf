#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraHealth
import ObscuraMedia
import ObscuraSystem
import ObscuraTOML

/// A board described as data (board/profiles/*.toml): which camera, which
/// encoders in which order, where the preview goes, which GPIO lines are the
/// buttons, LEDs and flash, and the defaults for recording.
public struct BoardProfile: Sendable, Equatable {
    public var file = ""
    public var name = ""
    /// Camera id; empty for the first camera libcamera lists.
    public var cameraID = ""
    public var size = PixelSize(width: 1920, height: 1080)
    public var frameRate = 30.0
    public var pixelFormat: PixelFormat?
    /// Encoders to try in order: "v4l2m2m" (the board's hardware encoder),
    /// "libx264", "libx265".
    public var encoders: [String] = ["libx264"]
    public var preset = "ultrafast"
    public var bitRate: Int?
    /// Preview: a DRM card path or connector name; empty for any connected one.
    public var previewDevice = ""
    public var previewConnector = ""
    public var previewPlane = "overlay"
    /// The board's microphone ("auto": the first ALSA capture device; "none").
    public var audioDevice = "none"
    public var audioRate = 48_000
    public var audioChannels = 1

    public struct GPIO: Sendable, Equatable {
        public var chip = ""
        public var recordButton: String?
        public var photoButton: String?
        public var flashButton: String?
        public var recordLED: String?
        public var statusLED: String?
        public var flashLED: String?
        /// The line that fires the flash (or drives the torch).
        public var flashOutput: String?
        public var activeLowButtons = true
        public var bias: GPIOBias = .pullUp
        public var debounce: Duration = .milliseconds(20)
        public var longPress: Duration = .seconds(1)

        public func line(_ name: String?) -> GPIOLineName? { name.map { GPIOLineName(chip: chip, line: $0) } }
    }
    public var gpio: GPIO?
    /// What the picture is watched for unless the configuration says
    /// (`health.conditions`): a camera whose picture is a still test pattern
    /// (vimc's) is frozen by definition and leaves `frozen` out.
    public var pictureConditions: Set<PictureCondition> = Set(PictureCondition.allCases)
    /// The tampering conditions watched unless the configuration says (a
    /// real camera's profile: all of them).
    public var tamperConditions: Set<TamperCondition> = Set(TamperCondition.allCases)
    /// Where the system's pressure is read (`[pressure]`): thermal zones'
    /// `temp` files (millidegrees; nil: every zone under /sys/class/thermal),
    /// the firmware's `get_throttled` (a file that is not there is no
    /// source), and the temperatures that make each level.
    public var pressureTemperatureFiles: [String]?
    public var pressureThrottledFile = BoardProfile.firmwareThrottledFile
    /// Where the Raspberry Pi firmware says its throttled flags.
    public static let firmwareThrottledFile = "/sys/devices/platform/soc/soc:firmware/get_throttled"
    public var pressure = PressureSettings()
    /// What the board gives the recorder (`[budget]`); nil: not predicted.
    public var budget: HardwareBudget?

    public static let encoderNames = ["v4l2m2m", "libx264", "libx265"]

    public init() {}

    /// Loads and validates a profile; errors name file, line and key.
    public init(contentsOf path: String) throws(ConfigurationError) {
        try self.init(reading: TOMLReader(try TOMLDocument(contentsOf: path)), file: path)
    }

    /// Reads the settings from `reader` (which then knows every key read).
    public init(reading reader: TOMLReader, file path: String) throws(ConfigurationError) {
        file = path
        name = try reader.require("board.name") { k throws(ConfigurationError) in try reader.string(k) }
        cameraID = try reader.string("camera.id") ?? ""
        if let text = try reader.string("camera.size") {
            guard let s = PixelSize(parsing: text) else {
                throw ConfigurationError(file: path, line: reader.document.values["camera.size"]?.line, key: "camera.size",
                                         message: "\"\(text)\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080")
            }
            size = s
        }
        frameRate = try reader.double("camera.frame_rate", Limits.frameRate) ?? 30
        if let f = try reader.string("camera.pixel_format") {
            guard f.count == 4 else {
                throw ConfigurationError(file: path, line: reader.document.values["camera.pixel_format"]?.line,
                                         key: "camera.pixel_format", message: "\"\(f)\" is not a fourcc (four characters, e.g. NV12)")
            }
            pixelFormat = PixelFormat(f)
        }
        encoders = try reader.strings("encoder.preference", allowed: Self.encoderNames) ?? ["libx264"]
        if encoders.isEmpty {
            throw ConfigurationError(file: path, line: reader.document.values["encoder.preference"]?.line,
                                     key: "encoder.preference", message: "name at least one encoder; allowed: \(Self.encoderNames.joined(separator: ", "))")
        }
        preset = try reader.string("encoder.preset", allowed: ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]) ?? "ultrafast"
        bitRate = try reader.int("encoder.bit_rate", Limits.bitRate)
        previewDevice = try reader.string("preview.device") ?? ""
        previewConnector = try reader.string("preview.connector") ?? ""
        previewPlane = try reader.string("preview.plane", allowed: ["overlay", "primary"]) ?? "overlay"
        audioDevice = try reader.string("audio.device") ?? "none"
        audioRate = try reader.int("audio.sample_rate", Limits.sampleRate) ?? 48_000
        audioChannels = try reader.int("audio.channels", Limits.channels) ?? 1
        if let names = try reader.strings("health.conditions", allowed: PictureHealthSettings.conditionNames) {
            pictureConditions = Set(names.compactMap(PictureCondition.init(rawValue:)))
            tamperConditions = Set(names.compactMap(TamperCondition.init(rawValue:)))
        }
        try readPressure(reader)
        budget = try HardwareBudget(reading: reader)
        if reader.document.tables.keys.contains(where: { $0 == "gpio" || $0.hasPrefix("gpio.") }) {
            var g = GPIO()
            g.chip = try reader.require("gpio.chip") { k throws(ConfigurationError) in try reader.string(k) }
            g.recordButton = try reader.string("gpio.buttons.record")
            g.photoButton = try reader.string("gpio.buttons.photo")
            g.flashButton = try reader.string("gpio.buttons.flash")
            g.recordLED = try reader.string("gpio.leds.record")
            g.statusLED = try reader.string("gpio.leds.status")
            g.flashLED = try reader.string("gpio.leds.flash")
            g.flashOutput = try reader.string("gpio.outputs.flash")
            g.activeLowButtons = try reader.bool("gpio.active_low_buttons") ?? true
            switch try reader.string("gpio.bias", allowed: ["pull-up", "pull-down", "disabled", "as-is"]) ?? "pull-up" {
            case "pull-down": g.bias = .pullDown
            case "disabled": g.bias = .disabled
            case "as-is": g.bias = .asIs
            default: g.bias = .pullUp
            }
            g.debounce = .milliseconds(try reader.int("gpio.debounce_ms", Limits.debounceMilliseconds) ?? 20)
            g.longPress = .milliseconds(try reader.int("gpio.long_press_ms", Limits.longPressMilliseconds) ?? 1000)
            let named = [g.recordButton, g.photoButton, g.flashButton, g.recordLED, g.statusLED, g.flashLED, g.flashOutput].compactMap { $0 }
            if let twice = named.first(where: { n in named.filter { $0 == n }.count > 1 }) {
                throw ConfigurationError(file: path, line: reader.document.tables["gpio"], key: "gpio",
                                         message: "line \"\(twice)\" is used twice")
            }
            gpio = g
        }
        try reader.rejectUnknownKeys()
    }

    /// Where shipped profiles live: next to the executable's package in a
    /// checkout, /usr/share/obscura/profiles when installed.
    public static func searchPaths() -> [String] {
        var paths: [String] = []
        if let env = ProcessInfo.processInfo.environment["OBSCURA_PROFILES"] { paths.append(env) }
        paths.append("/usr/share/obscura/profiles")
        var dir = Paths.folder(URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path)
        for _ in 0..<4 {
            paths.append((dir.hasSuffix("/") ? dir : dir + "/") + "board/profiles")
            dir = Paths.folder(dir)
        }
        paths.append(FileManager.default.currentDirectoryPath + "/board/profiles")
        return paths
    }

    /// A profile by name ("pi4b") or path.
    public static func load(_ nameOrPath: String, from config: String) throws(ConfigurationError) -> BoardProfile {
        if nameOrPath.contains("/") { return try BoardProfile(contentsOf: nameOrPath) }
        for dir in searchPaths() {
            let candidate = "\(dir)/\(nameOrPath).toml"
            if FileManager.default.fileExists(atPath: candidate) { return try BoardProfile(contentsOf: candidate) }
        }
        let known = searchPaths().flatMap { (try? FileManager.default.contentsOfDirectory(atPath: $0)) ?? [] }
            .filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }
        throw ConfigurationError(file: config, line: nil, key: "board",
                                 message: "no profile \"\(nameOrPath)\"; known: \(Set(known).sorted().joined(separator: ", "))")
    }
}

extension BoardProfile {
    /// What `configuration` costs on this board, nil when the profile has no
    /// budget.
    public func cost(of configuration: ServiceConfiguration) -> HardwareCost? {
        let demands = configuration.cameras.isEmpty ? [CameraDemand(configuration: configuration, profile: self)]
            : configuration.cameras.map { camera in
                var demand = CameraDemand(configuration: configuration.member(camera), profile: member(camera))
                demand.name = camera.name
                return demand
            }
        return budget.map { HardwareCost(demands, budget: $0) }
    }

    /// The `[pressure]` table: its sources and thresholds.
    public mutating func readPressure(_ reader: TOMLReader) throws(ConfigurationError) {
        pressureTemperatureFiles = try reader.strings("pressure.temperature_files")
        pressureThrottledFile = try reader.string("pressure.throttled_file") ?? pressureThrottledFile
        var p = PressureSettings()
        p.fairCelsius = try reader.double("pressure.fair_celsius", Limits.pressureCelsius) ?? p.fairCelsius
        p.seriousCelsius = try reader.double("pressure.serious_celsius", Limits.pressureCelsius) ?? p.seriousCelsius
        p.criticalCelsius = try reader.double("pressure.critical_celsius", Limits.pressureCelsius) ?? p.criticalCelsius
        p.hysteresisCelsius = try reader.double("pressure.hysteresis_celsius", Limits.hysteresisCelsius) ?? p.hysteresisCelsius
        p.countsBacklog = try reader.bool("pressure.backlog") ?? true
        guard p.fairCelsius <= p.seriousCelsius, p.seriousCelsius <= p.criticalCelsius else {
            throw ConfigurationError(file: reader.document.file, line: reader.document.tables["pressure"], key: "pressure",
                                     message: "fair_celsius (\(p.fairCelsius)) ≤ serious_celsius (\(p.seriousCelsius)) ≤ critical_celsius (\(p.criticalCelsius)) is required")
        }
        pressure = p
    }
}
