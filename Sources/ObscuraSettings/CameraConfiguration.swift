import ObscuraControl
import ObscuraMedia
import ObscuraSystem
import ObscuraTOML

/// One camera of a kiosk with several (`[cameras.NAME]`). Without any such
/// table the kiosk has the one camera its profile names, as always.
///
/// ```toml
/// [cameras.counter]
/// id = "/base/axi/pcie@120000/rp1/i2c@88000/imx708@1a"  # as `obscura devices` lists it
/// size = "1920x1080"              # default: [recording]'s, else the profile's
/// frame_rate = 30                 # default: [recording]'s, else the profile's
/// bit_rate = 6000000              # default: [recording]'s, else the profile's
/// encoders = ["libx264"]          # default: the profile's, in its order
/// record_button = "GPIO22"        # a line of the profile's GPIO chip that records this camera alone
/// ```
///
/// The name goes into the camera's file names, its status, its metrics'
/// `camera` label and `obscura view --camera NAME`.
public struct CameraConfiguration: Sendable, Equatable {
    public var name: String
    public var id: String
    public var size: PixelSize?
    public var frameRate: Double?
    public var bitRate: Int?
    public var encoders: [String]?
    public var recordButton: String?

    public init(name: String, id: String) {
        self.name = name
        self.id = id
    }

    /// Every `[cameras.NAME]` table of the document, in the file's order.
    static func read(_ reader: TOMLReader, file path: String) throws(ConfigurationError) -> [CameraConfiguration] {
        let names = cameraNames(reader.document)
        var cameras: [CameraConfiguration] = []
        for (name, line) in names {
            func fail(_ key: String, _ message: String) -> ConfigurationError {
                ConfigurationError(file: path, line: reader.document.values[key]?.line ?? line, key: key, message: message)
            }
            let base = "cameras.\(name)"
            guard CameraName.isValid(name) else {
                throw fail(base, "\"\(name)\" cannot name a camera: its name goes into file names, so use up to 32 of a-z, 0-9 and _ (e.g. [cameras.door])")
            }
            let id = try reader.require("\(base).id") { k throws(ConfigurationError) in try reader.string(k) }
            var camera = CameraConfiguration(name: name, id: id)
            if let text = try reader.string("\(base).size") {
                guard let s = PixelSize(parsing: text) else {
                    throw fail("\(base).size", "\"\(text)\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080")
                }
                camera.size = s
            }
            camera.frameRate = try reader.double("\(base).frame_rate", Limits.frameRate)
            camera.bitRate = try reader.int("\(base).bit_rate", Limits.bitRate)
            camera.encoders = try reader.strings("\(base).encoders", allowed: BoardProfile.encoderNames)
            camera.recordButton = try reader.string("\(base).record_button")
            if let twin = cameras.first(where: { $0.id == id }) {
                throw fail("\(base).id", "camera \"\(id)\" is already [cameras.\(twin.name)]: one camera cannot record twice; give each table its own camera")
            }
            if let button = camera.recordButton, let twin = cameras.first(where: { $0.recordButton == button }) {
                throw fail("\(base).record_button", "\(button) is already [cameras.\(twin.name)]'s record button; a button records one camera (the profile's record button records all)")
            }
            cameras.append(camera)
        }
        return cameras
    }

    /// The names of the `[cameras.NAME]` tables (and of dotted keys under
    /// `cameras.`), each with the line it first appears on, in that order.
    private static func cameraNames(_ document: TOMLDocument) -> [(String, Int)] {
        var first: [String: Int] = [:]
        let keys = document.tables.map { ($0.key, $0.value) } + document.values.map { ($0.key, $0.value.line) }
        for (key, line) in keys where key.hasPrefix("cameras.") {
            let name = String(key.dropFirst("cameras.".count).split(separator: ".", omittingEmptySubsequences: false).first ?? "")
            first[name] = min(first[name] ?? line, line)
        }
        return first.sorted { $0.value < $1.value }.map { ($0.key, $0.value) }
    }
}

extension ServiceConfiguration {
    /// The settings one of several cameras records with: its size, rate and
    /// bit rate over `[recording]`'s; its files named after it; the files it
    /// is writing in a folder of its own (two recorders never recover each
    /// other's); its live view on a socket of its own.
    public func member(_ camera: CameraConfiguration) -> ServiceConfiguration {
        var c = self
        c.cameras = []
        c.cameraName = camera.name
        c.size = camera.size ?? size
        c.frameRate = camera.frameRate ?? frameRate
        c.bitRate = camera.bitRate ?? bitRate
        c.partialFolder = resolvedPartialFolder + "/" + camera.name
        if !liveSocket.isEmpty { c.liveSocket = CameraName.liveSocket(camera.name, beside: liveSocket) }
        c.metricsFile = ""
        return c
    }
}

extension BoardProfile {
    /// The profile as one of several cameras sees it: that camera's id, and
    /// its encoders over the profile's.
    public func member(_ camera: CameraConfiguration) -> BoardProfile {
        var p = self
        p.cameraID = camera.id
        if let encoders = camera.encoders { p.encoders = encoders }
        return p
    }
}
