import ObscuraMedia

/// What one camera asks of the board: its picture and how it is encoded.
public struct CameraDemand: Sendable, Equatable {
    public var name: String
    public var size: PixelSize
    public var frameRate: Double
    public var codec: VideoCodec
    /// The profile's (or the camera's) encoders, in order: "v4l2m2m", "libx264", …
    public var encoders: [String]
    public var preset: String
    /// The camera's frames in bytes per pixel (NV12: 1.5; BGR888: 3).
    public var bytesPerPixel: Double
    /// Whether each frame is converted before the encoder takes it.
    public var converts: Bool
    /// The camera's output buffers.
    public var buffers = 6

    public init(name: String, size: PixelSize, frameRate: Double, codec: VideoCodec, encoders: [String], preset: String,
                bytesPerPixel: Double, converts: Bool) {
        self.name = name
        self.size = size
        self.frameRate = frameRate
        self.codec = codec
        self.encoders = encoders
        self.preset = preset
        self.bytesPerPixel = bytesPerPixel
        self.converts = converts
    }

    /// The one camera a configuration records today: its `[recording]`
    /// size and rate over the profile's, the profile's encoders.
    public init(configuration c: ServiceConfiguration, profile p: BoardProfile) {
        let format = p.pixelFormat ?? .bgr888
        self.init(name: "", size: c.size ?? p.size, frameRate: c.frameRate ?? p.frameRate,
                  codec: c.codec, encoders: p.encoders, preset: p.preset,
                  bytesPerPixel: format.info.map { Double($0.bytesPerFrame(width: 64, height: 64)) / 4096 } ?? 1.5,
                  converts: ![.nv12, .yuv420].contains(format))
    }

    var megapixels: Double { Double(size.area) / 1e6 }
    /// Pixels a second as an H.264 encoder counts them: whole 16x16 macroblocks.
    var pixelRate: Double { Double((size.width + 15) / 16 * 16 * ((size.height + 15) / 16 * 16)) * frameRate }
}

/// AVFoundation's `hardwareCost`, before anything starts: what a set of
/// cameras needs of the board's encoder, CPU and buffer memory, against its
/// budget (`HardwareBudget`). `cost` is the largest share of the three: up
/// to 1.0 fits; above, the configuration is refused where the budget is
/// enforced, and `remedies` say what would fit.
public struct HardwareCost: Sendable, Equatable {
    public struct Camera: Sendable, Equatable {
        public var name: String
        /// The encoder the service would take ("v4l2m2m", "libx264", …).
        public var encoder: String
        public var cores: Double
        /// The share of the hardware encoder's pixel rate.
        public var encoderShare: Double
        public var memoryBytes: Int
        /// Set when no measured figure covers this encoder and preset.
        public var unknown: String?
    }

    public let budget: HardwareBudget
    public let cameras: [Camera]
    public var cores: Double { cameras.reduce(0) { $0 + $1.cores } }
    public var encoderShare: Double { cameras.reduce(0) { $0 + $1.encoderShare } }
    public var memoryBytes: Int { cameras.reduce(0) { $0 + $1.memoryBytes } }
    public var cost: Double { max(cores / budget.cores, encoderShare, Double(memoryBytes) / Double(budget.bufferMemoryBytes)) }
    public var fits: Bool { cost <= 1.0 }
    public private(set) var remedies: [String] = []

    public init(_ demands: [CameraDemand], budget: HardwareBudget, remedies: Bool = true) {
        self.budget = budget
        cameras = demands.map { Self.predict($0, budget) }
        if remedies, !fits { self.remedies = Self.remedies(demands, cameras, budget) }
    }

    static func hardwareTakes(_ d: CameraDemand, _ b: HardwareBudget) -> Bool {
        b.encoderPixelRate > 0 && [.h264, .fwht].contains(d.codec)
            && b.encoderMaxSize.map { d.size.width <= $0.width && d.size.height <= $0.height } != false
    }

    static func softwareEncoder(_ codec: VideoCodec) -> String {
        switch codec {
        case .h264: "libx264"
        case .hevc: "libx265"
        case .mjpeg: "mjpeg"
        case .prores422: "prores_aw"
        case .fwht: "fwht"
        }
    }

    /// One camera: the encoder the service would take (the first of its
    /// preference the board has for its codec and size), what that costs.
    static func predict(_ d: CameraDemand, _ b: HardwareBudget) -> Camera {
        let hardware = d.encoders.first.map { $0 == "v4l2m2m" } == true && hardwareTakes(d, b)
        let frameBytes = Int(Double(d.size.area) * d.bytesPerPixel)
        var memory = d.buffers * frameBytes + b.cameraMemoryBytes
        let perFrame = b.cameraMillisecondsPerMegapixel + (d.converts ? b.conversionMillisecondsPerMegapixel : 0)
        var cores = perFrame * d.megapixels * d.frameRate / 1000
        if hardware {
            memory += 4 * max(1 << 20, frameBytes / 4)  // the coded queue's buffers
            return Camera(name: d.name, encoder: "v4l2m2m", cores: cores, encoderShare: d.pixelRate / b.encoderPixelRate, memoryBytes: memory)
        }
        let encoder = softwareEncoder(d.codec)
        guard let ms = b.softwareMillisecondsPerMegapixel[encoder]?[d.preset] else {
            return Camera(name: d.name, encoder: encoder, cores: cores, encoderShare: 0, memoryBytes: memory,
                          unknown: "no measured CPU figure for \(encoder) at \(d.preset) on this board")
        }
        cores += ms * d.megapixels * d.frameRate / 1000
        return Camera(name: d.name, encoder: encoder, cores: cores, encoderShare: 0, memoryBytes: memory)
    }
}
