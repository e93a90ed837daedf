#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import ObscuraControl
import ObscuraMedia
import ObscuraSystem
import ObscuraTOML

/// The recorder service's configuration (/etc/obscura/obscura.toml). Every
/// key is optional; without a file the defaults below apply. Errors name the
/// file, line and key.
///
/// ```toml
/// board = "pi4b"                  # a profile name (board/profiles) or a path
///
/// [recording]
/// start = "button"                # button: the record button (or `obscura ctl`) starts it;
///                                 # power-on: recording from the service's start, always on
/// folder = "/var/lib/obscura/recordings"
/// codec = "h264"                  # h264, hevc, mjpeg (prores422 needs a 10-bit 4:2:2 camera);
///                                 # fwht (vicodec's) is written as an elementary .fwht stream
/// container = "mp4"               # mp4, mov, mkv
/// size = "1920x1080"              # default: the profile's
/// frame_rate = 30                 # default: the profile's; set on the camera (or the nearest it allows)
/// bit_rate = 8000000              # default: the profile's
/// segment_seconds = 300           # a new file every five minutes; 0: one file
/// fragment_seconds = 0.5          # each fragment synced when complete: a power cut loses
///                                 # about this much more than the encoder's latency
/// pre_record_seconds = 5          # 0: off
/// min_free_space_mb = 256
/// quota_mb = 20000                # loop recording: oldest finished files go; 0: no quota
/// partial_folder = "/var/lib/obscura/incoming"  # files being written (default: beside the
///                                 # recordings folder; same filesystem; never shared)
///
/// [audio]
/// device = "auto"                 # default: the profile's (none, auto, or an ALSA name from `obscura devices`)
/// codec = "aac"                   # aac (mp4, mov, mkv) or opus (mkv)
/// bit_rate = 96000
///
/// [photo]
/// folder = "/var/lib/obscura/photos"
/// raw = false                     # also a DNG from the camera's raw stream (if it has one)
///
/// [preview]
/// enabled = false                 # the camera on the attached display (KMS); headless if none
/// device = "/dev/dri/card1"       # default: the first card with a connected display
/// gravity = "fit"                 # fit, fill, stretch
/// rotation = 0                    # 0, 90, 180, 270 (clockwise)
///
/// [control]
/// socket = "/run/obscura/control.sock"
///
/// [metrics]
/// file = "/run/obscura-metrics/obscura.prom"  # for node_exporter's textfile collector; "" : none
/// interval_seconds = 5
///
/// [usb]
/// drive = "LABEL=OBSCURA"         # or its mount point, e.g. "/media/obscura"; "": none (the default)
/// folder = "obscura/recordings"   # on the drive
/// quota_mb = 0                    # loop recording on the drive; 0: no quota
/// min_free_space_mb = 256
///
/// [overlay]
/// enabled = false                 # a caption burned into every recorded frame
/// text = ""                       # a text of one's own (second line)
/// camera_name = true              # the camera's name on the second line
/// position = "top-left"           # top-left, top-right, bottom-left, bottom-right
/// size = 0                        # text height in pixels; 0: a 24th of the frame's height
/// colour = "white"                # #rrggbb or white, black, yellow, red, green, blue
/// background = "box"              # box (opaque, behind the text) or outline
/// font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
/// preview = false                 # the preview shows the caption too
/// photos = true                   # and photos (JPEG; RAW stays as the sensor gave it)
///
/// [encryption]
/// recipients = ["age1…"]          # age X25519 public keys (age-keygen's): recordings and
///                                 # photos are encrypted to them as they are written (.age)
/// recipients_file = "/etc/obscura/recipients.txt"  # or one age1… per line (`age -R`'s format)
/// align_to_chunks = false          # fragments end on age's 64 KiB chunks, so `age -d` of a
///                                 # killed recording gives whole fragments (costs filler)
/// ```
/// and `[health]` (`HealthConfiguration`), `[pressure]` (`PressureConfiguration`)
/// and `[cameras.NAME]` (`CameraConfiguration`).
public struct ServiceConfiguration: Sendable, Equatable {
    public var file = "(defaults)"
    public var board = "virtual"
    public var recordingsFolder = "/var/lib/obscura/recordings"
    public var photosFolder = "/var/lib/obscura/photos"
    /// A DNG beside each JPEG, from the camera's raw stream.
    public var photoRaw = false
    public var codec = VideoCodec.h264
    public var container = MovieContainer.mp4
    /// What recordings are written in: FWHT, which no container knows, as
    /// an elementary stream; every other codec in `container`.
    public var recordingContainer: MovieContainer { codec == .fwht ? .elementary : container }
    public var recordingExtension: String { (codec == .fwht ? "fwht" : container.rawValue) + (recipients.isEmpty ? "" : ".age") }
    /// The caption burned into recordings (`[overlay]`); nil: none. Its
    /// camera name is filled in from the camera when `overlayCameraName`.
    public var overlay: OverlaySettings?
    public var overlayCameraName = true
    /// Whether the preview shows the caption too (`overlay.preview`).
    public var overlayOnPreview = false
    /// Whether photos carry the caption too (`overlay.photos`).
    public var overlayOnPhotos = true
    /// Recordings and photos are encrypted to these (age); empty: not.
    public var recipients: [AgeRecipient] = []
    /// Encrypted recordings' fragments end on age's chunks
    /// (`encryption.align_to_chunks`).
    public var alignsToAgeChunks = false
    /// A photo's name ends so: `.jpg`, or `.jpg.age` when encrypted.
    public func photoExtension(raw: Bool) -> String { (raw ? ".dng" : ".jpg") + (recipients.isEmpty ? "" : ".age") }
    public var size: PixelSize?
    public var frameRate: Double?
    public var bitRate: Int?
    /// What starts a recording (`recording.start`).
    public var recordingStart = RecordingStart.button
    public var segmentSeconds = 300
    public var fragmentSeconds = 0.5
    public var preRecordSeconds = 0.0
    public var minFreeSpaceBytes = 256 << 20
    public var quotaBytes = 0
    /// A drive that recordings go to when present (`[usb]`); nil: none.
    public var drive: DriveConfiguration?
    /// Files being written, as `<name>.partial`; renamed into the recordings
    /// or photos folder when finished. Default: `incoming` beside the
    /// recordings folder.
    public var partialFolder: String?
    public var resolvedPartialFolder: String {
        if let partialFolder { return partialFolder }
        let recordings = recordingsFolder.count > 1 && recordingsFolder.hasSuffix("/") ? String(recordingsFolder.dropLast()) : recordingsFolder
        let parent = Paths.folder(recordings)
        return (parent.hasSuffix("/") ? parent : parent + "/") + "incoming"
    }
    public var controlSocket = ControlSocketSetting.defaultSocket
    /// The live view's socket ("" for none) and how many may watch at once.
    public var liveSocket = "/run/obscura-live/live.sock"
    public var liveViewers = 4
    /// nil: the board profile's device.
    public var audioDevice: String?
    public var audioCodec = AudioCodec.aac
    public var audioBitRate = 96_000
    public var previewEnabled = false
    public var previewDevice: String?
    public var previewGravity = "fit"
    public var previewRotation = 0
    /// Prometheus text format for node_exporter's textfile collector; empty: none.
    public var metricsFile = "/run/obscura-metrics/obscura.prom"
    public var metricsInterval = 5
    /// What the picture is watched for (`[health]`).
    public var health = HealthConfiguration()
    /// Whether the recording steps down under pressure (`[pressure]`).
    public var pressure = PressureConfiguration()
    /// The cameras, when `[cameras.NAME]` tables name several; empty: the
    /// profile's one camera.
    public var cameras: [CameraConfiguration] = []
    /// The camera this configuration records, when it is one of several:
    /// its name follows the time in its files' names.
    public var cameraName: String?

    public static let defaultPath = ControlSocketSetting.configurationFile

    public init() {}

    public init(contentsOf path: String) throws(ConfigurationError) {
        try self.init(reading: TOMLReader(try TOMLDocument(contentsOf: path)), file: path)
    }

    /// Reads the settings from `reader` (which then knows every key read).
    /// (longer than 80 lines: one statement per key, in the order of the
    /// sample configuration, so that a key and its check are found together.)
    public init(reading reader: TOMLReader, file path: String) throws(ConfigurationError) {
        file = path
        board = try reader.string("board") ?? board
        recordingsFolder = try reader.string("recording.folder") ?? recordingsFolder
        if let s = try reader.string("recording.start", allowed: RecordingStart.allCases.map(\.rawValue)) { recordingStart = RecordingStart(rawValue: s)! }
        photosFolder = try reader.string("photo.folder") ?? photosFolder
        photoRaw = try reader.bool("photo.raw") ?? false
        if let c = try reader.string("recording.codec", allowed: VideoCodec.allCases.map(\.rawValue)) { codec = VideoCodec(rawValue: c)! }
        if let c = try reader.string("recording.container", allowed: ["mp4", "mov", "mkv"]) { container = MovieContainer(rawValue: c)! }
        if let text = try reader.string("recording.size") {
            guard let s = PixelSize(parsing: text) else {
                throw ConfigurationError(file: path, line: reader.document.values["recording.size"]?.line, key: "recording.size",
                                         message: "\"\(text)\" is not a size; write WIDTHxHEIGHT, e.g. 1920x1080")
            }
            size = s
        }
        frameRate = try reader.double("recording.frame_rate", Limits.frameRate)
        bitRate = try reader.int("recording.bit_rate", Limits.bitRate)
        segmentSeconds = try reader.int("recording.segment_seconds", Limits.configSegmentSeconds) ?? segmentSeconds
        fragmentSeconds = try reader.double("recording.fragment_seconds", Limits.fragmentSeconds) ?? fragmentSeconds
        preRecordSeconds = try reader.double("recording.pre_record_seconds", Limits.configPreRecordSeconds) ?? 0
        minFreeSpaceBytes = (try reader.int("recording.min_free_space_mb", Limits.freeSpaceMegabytes) ?? 256) << 20
        quotaBytes = (try reader.int("recording.quota_mb", Limits.quotaMegabytes) ?? 0) << 20
        partialFolder = try reader.string("recording.partial_folder")
        audioDevice = try reader.string("audio.device")
        if let c = try reader.string("audio.codec", allowed: AudioCodec.allCases.map(\.rawValue)) { audioCodec = AudioCodec(rawValue: c)! }
        audioBitRate = try reader.int("audio.bit_rate", Limits.audioBitRate) ?? 96_000
        if audioCodec == .opus, container != .mkv, audioDevice != "none" {
            throw ConfigurationError(file: path, line: reader.document.values["audio.codec"]?.line, key: "audio.codec",
                                     message: "opus goes only in mkv recordings; set recording.container = \"mkv\" or use aac")
        }
        controlSocket = try ControlSocketSetting.read(reader) ?? controlSocket
        liveSocket = try reader.string("live.socket") ?? liveSocket
        liveViewers = try reader.int("live.max_viewers", Limits.liveViewers) ?? liveViewers
        previewEnabled = try reader.bool("preview.enabled") ?? false
        previewDevice = try reader.string("preview.device")
        previewGravity = try reader.string("preview.gravity", allowed: ["fit", "fill", "stretch"]) ?? "fit"
        if let r = try reader.int("preview.rotation") {
            guard [0, 90, 180, 270].contains(r) else {
                throw ConfigurationError(file: path, line: reader.document.values["preview.rotation"]?.line, key: "preview.rotation",
                                         message: "\(r) is not one of 0, 90, 180, 270")
            }
            previewRotation = r
        }
        metricsFile = try reader.string("metrics.file") ?? metricsFile
        metricsInterval = try reader.int("metrics.interval_seconds", Limits.metricsInterval) ?? metricsInterval
        if !metricsFile.isEmpty, !metricsFile.hasSuffix(".prom") {
            throw ConfigurationError(file: path, line: reader.document.values["metrics.file"]?.line, key: "metrics.file",
                                     message: "\"\(metricsFile)\" must end in .prom (node_exporter's textfile collector reads only those), or be \"\" for no metrics")
        }
        for (key, value) in [("recording.folder", recordingsFolder), ("photo.folder", photosFolder), ("control.socket", controlSocket),
                             ("recording.partial_folder", partialFolder ?? "/"), ("metrics.file", metricsFile.isEmpty ? "/" : metricsFile),
                             ("live.socket", liveSocket.isEmpty ? "/" : liveSocket)]
        where !value.hasPrefix("/") {
            throw ConfigurationError(file: path, line: reader.document.values[key]?.line, key: key,
                                     message: "\"\(value)\" must be an absolute path")
        }
        if resolvedPartialFolder == recordingsFolder || resolvedPartialFolder == photosFolder {
            throw ConfigurationError(file: path, line: reader.document.values["recording.partial_folder"]?.line, key: "recording.partial_folder",
                                     message: "\"\(resolvedPartialFolder)\" must differ from the recordings and photos folders: they are shared, files being written are not")
        }
        if let text = try reader.string("usb.drive"), !text.isEmpty {
            guard let identity = DriveConfiguration.identity(text) else {
                throw ConfigurationError(file: path, line: reader.document.values["usb.drive"]?.line, key: "usb.drive",
                                         message: "\"\(text)\" is neither LABEL=<filesystem label> nor an absolute mount point (e.g. \"LABEL=OBSCURA\" or \"/media/obscura\")")
            }
            var d = DriveConfiguration(identity: identity)
            if let folder = try reader.string("usb.folder") {
                let parts = folder.split(separator: "/")
                guard !folder.hasPrefix("/"), !parts.isEmpty, !parts.contains(".."), !parts.contains(".") else {
                    throw ConfigurationError(file: path, line: reader.document.values["usb.folder"]?.line, key: "usb.folder",
                                             message: "\"\(folder)\" must be a folder relative to the drive's root, e.g. \"obscura/recordings\"")
                }
                d.folder = parts.joined(separator: "/")
            }
            d.quotaBytes = (try reader.int("usb.quota_mb", Limits.quotaMegabytes) ?? 0) << 20
            d.minFreeSpaceBytes = (try reader.int("usb.min_free_space_mb", Limits.freeSpaceMegabytes) ?? 256) << 20
            drive = d
        } else {
            // Read so that they are known keys; without a drive they say nothing.
            _ = try reader.string("usb.folder")
            _ = try reader.int("usb.quota_mb", Limits.quotaMegabytes)
            _ = try reader.int("usb.min_free_space_mb", Limits.freeSpaceMegabytes)
        }
        try readOverlay(reader, file: path)
        for text in try reader.strings("encryption.recipients") ?? [] {
            do { recipients.append(try AgeRecipient(text)) } catch {
                throw ConfigurationError(file: path, line: reader.document.values["encryption.recipients"]?.line,
                                         key: "encryption.recipients", message: "\(error)")
            }
        }
        if let file = try reader.string("encryption.recipients_file"), !file.isEmpty {
            let line = reader.document.values["encryption.recipients_file"]?.line
            guard file.hasPrefix("/") else {
                throw ConfigurationError(file: path, line: line, key: "encryption.recipients_file", message: "\"\(file)\" must be an absolute path")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ConfigurationError(file: path, line: line, key: "encryption.recipients_file",
                                         message: "cannot read \(file) (\(String(cString: strerror(errno)))); it holds age1… recipients, one per line")
            }
            do { recipients += try AgeRecipient.parseFile(text, name: file) } catch {
                throw ConfigurationError(file: path, line: line, key: "encryption.recipients_file", message: "\(error)")
            }
        }
        alignsToAgeChunks = try reader.bool("encryption.align_to_chunks") ?? false
        health = try HealthConfiguration(reading: reader, file: path)
        pressure = try PressureConfiguration(reading: reader)
        cameras = try CameraConfiguration.read(reader, file: path)
        try reader.rejectUnknownKeys()
    }

    /// `[overlay]`: every key read (so none is unknown), checked when enabled.
    private mutating func readOverlay(_ reader: TOMLReader, file path: String) throws(ConfigurationError) {
        func fail(_ key: String, _ message: String) -> ConfigurationError {
            ConfigurationError(file: path, line: reader.document.values[key]?.line, key: key, message: message)
        }
        let enabled = try reader.bool("overlay.enabled") ?? false
        var o = OverlaySettings()
        o.text = try reader.string("overlay.text") ?? ""
        overlayCameraName = try reader.bool("overlay.camera_name") ?? true
        if let position = try reader.string("overlay.position", allowed: OverlaySettings.Position.allCases.map(\.rawValue)) {
            o.position = OverlaySettings.Position(rawValue: position)!
        }
        if let size = try reader.int("overlay.size") {
            guard size == 0 || OverlaySettings.sizes.contains(size) else {
                throw fail("overlay.size", "\(size) is not 0 (a 24th of the frame's height) nor within \(OverlaySettings.sizes.lowerBound)…\(OverlaySettings.sizes.upperBound) pixels")
            }
            o.size = size
        }
        if let text = try reader.string("overlay.colour") {
            guard let colour = RGB(parsing: text) else {
                throw fail("overlay.colour", "\"\(text)\" is not a colour; write #rrggbb or one of \(RGB.named.keys.sorted().joined(separator: ", "))")
            }
            o.colour = colour
        }
        if let background = try reader.string("overlay.background", allowed: OverlaySettings.Background.allCases.map(\.rawValue)) {
            o.background = OverlaySettings.Background(rawValue: background)!
        }
        if let font = try reader.string("overlay.font") { o.font = font }
        overlayOnPreview = try reader.bool("overlay.preview") ?? false
        overlayOnPhotos = try reader.bool("overlay.photos") ?? true
        guard enabled else { return }
        guard FileManager.default.isReadableFile(atPath: o.font) else {
            throw fail("overlay.font", "cannot read \(o.font): a TrueType font file is needed (Debian's fonts-dejavu-core has \(OverlaySettings.defaultFont))")
        }
        overlay = o
    }

    /// The file at `path` if given, else /etc/obscura/obscura.toml when it
    /// exists, else the defaults.
    public static func load(_ path: String?) throws(ConfigurationError) -> ServiceConfiguration {
        if let path { return try ServiceConfiguration(contentsOf: path) }
        if FileManager.default.fileExists(atPath: defaultPath) { return try ServiceConfiguration(contentsOf: defaultPath) }
        return ServiceConfiguration()
    }
}

/// What starts a recording: the record button (or `obscura ctl record
/// start`), or the service's own start, for a recorder that is always on
/// (the button still stops and starts it).
public enum RecordingStart: String, Sendable, CaseIterable {
    case button
    case powerOn = "power-on"
}
