import ObscuraMedia
import ObscuraTOML

/// What a board gives the recorder (a profile's `[budget]`): the figures a
/// configuration's cost is predicted from before anything starts
/// (`HardwareCost`). Each figure is either measured on the board
/// (`bench/x264-presets`, `bench/two-cameras`) or said in the profile to be
/// an estimate.
///
/// ```toml
/// [budget]
/// cores = 3                          # CPU cores the recorder may keep busy
/// encoder_pixel_rate = 62668800      # the hardware encoder's pixels a second (0: none)
/// encoder_max_size = "1920x1080"     # its largest frame
/// buffer_memory_mb = 256             # for camera and encoder buffers (CMA on a Pi)
/// camera_memory_mb = 60              # what a camera's pipeline keeps besides its output buffers
/// conversion_ms_per_megapixel = 2.0  # CPU for a frame converted to the encoder's format
/// camera_ms_per_megapixel = 0        # CPU the camera's own driver takes a frame (0: an ISP)
/// enforced = true                    # a configuration over budget is refused
///
/// [budget.libx264]                   # CPU ms per megapixel frame, by preset
/// ultrafast = 20
/// ```
public struct HardwareBudget: Sendable, Equatable {
    public var cores = 1.0
    public var encoderPixelRate = 0.0
    public var encoderMaxSize: PixelSize?
    public var bufferMemoryBytes = 256 << 20
    public var cameraMemoryBytes = 0
    public var conversionMillisecondsPerMegapixel = 0.0
    /// CPU the camera's driver takes for a frame (vimc renders in the
    /// kernel; an ISP takes none).
    public var cameraMillisecondsPerMegapixel = 0.0
    /// Software encoders' CPU per megapixel frame: encoder → preset → ms.
    public var softwareMillisecondsPerMegapixel: [String: [String: Double]] = [:]
    /// Whether a configuration over budget is refused at check and start.
    /// (An emulated board's speed is its host's: predicted, not enforced.)
    public var enforced = true

    public static let softwareEncoders = ["libx264", "libx265"]
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]

    public init() {}

    /// The `[budget]` table, or nil when the profile has none.
    public init?(reading reader: TOMLReader) throws(ConfigurationError) {
        let doc = reader.document
        guard doc.tables["budget"] != nil || doc.values.keys.contains(where: { $0.hasPrefix("budget.") }) else { return nil }
        cores = try reader.double("budget.cores", range: 0.1...64) ?? cores
        encoderPixelRate = try reader.double("budget.encoder_pixel_rate", range: 0...4e9) ?? 0
        if let text = try reader.string("budget.encoder_max_size") {
            guard let size = PixelSize(parsing: text) else {
                throw ConfigurationError(file: doc.file, line: doc.values["budget.encoder_max_size"]?.line, key: "budget.encoder_max_size",
                                         message: "\"\(text)\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080")
            }
            encoderMaxSize = size
        }
        bufferMemoryBytes = (try reader.int("budget.buffer_memory_mb", range: 1...65_536) ?? 256) << 20
        cameraMemoryBytes = (try reader.int("budget.camera_memory_mb", range: 0...65_536) ?? 0) << 20
        conversionMillisecondsPerMegapixel = try reader.double("budget.conversion_ms_per_megapixel", range: 0...10_000) ?? 0
        cameraMillisecondsPerMegapixel = try reader.double("budget.camera_ms_per_megapixel", range: 0...10_000) ?? 0
        enforced = try reader.bool("budget.enforced") ?? true
        for encoder in Self.softwareEncoders {
            for preset in Self.presets {
                if let ms = try reader.double("budget.\(encoder).\(preset)", range: 0.01...100_000) {
                    softwareMillisecondsPerMegapixel[encoder, default: [:]][preset] = ms
                }
            }
        }
    }
}
