import ObscuraHealth
import ObscuraMedia
import ObscuraSystem
import ObscuraTOML

/// Every key of the service's configuration (/etc/obscura/obscura.toml): its
/// table, type, default, what is allowed and what it means. The one source
/// of `obscura config`, docs/configuration.md and obscura.toml(5); the
/// defaults and limits are the code's own values. ConfigurationReferenceTests
/// fails when a key the service reads is missing here, or one here is not
/// read, or a key's example is refused.
public enum ConfigurationReference {
    public struct Key: Sendable {
        /// "recording.codec"; a key of the top level has no table.
        public let name: String
        public let type: String
        public let defaultValue: String
        public let allowed: String
        public let meaning: String
        /// A value the service takes, as TOML writes it.
        public let example: String

        public var table: String { name.split(separator: ".").dropLast().joined(separator: ".") }
        public var key: String { String(name.split(separator: ".").last ?? "") }
    }

    public struct Table: Sendable {
        public let name: String
        public let about: String
    }

    static let defaults = ServiceConfiguration()
    static let picture = PictureHealthSettings()
    static let sound = SoundHealthSettings()
    static let drive = DriveConfiguration(identity: .mountPoint("/"))
    static let caption = OverlaySettings()

    static func key(_ name: String, _ type: String, _ defaultValue: String, _ allowed: String, _ example: String, _ meaning: String) -> Key {
        Key(name: name, type: type, defaultValue: defaultValue, allowed: allowed, meaning: meaning, example: example)
    }
    static func quoted(_ s: String) -> String { "\"\(s)\"" }
    static func number(_ d: Double) -> String { d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d) }
    static func seconds(_ d: Duration) -> String { number(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) }
    static func list(_ names: [String]) -> String { "[" + names.map(quoted).joined(separator: ", ") + "]" }
    static let path = "an absolute path"
    static let profiles = "the board profile's"

    public static let tables: [Table] = [
        Table(name: "", about: "The board the kiosk is."),
        Table(name: "recording", about: "Where and how recordings are made."),
        Table(name: "audio", about: "The microphone recorded with the picture."),
        Table(name: "photo", about: "Photos, from the photo button or `obscura ctl photo`."),
        Table(name: "preview", about: "The camera on a display attached to the kiosk (KMS: no desktop needed)."),
        Table(name: "control", about: "The socket `obscura status` and `obscura ctl` talk to."),
        Table(name: "live", about: "The live view: what `obscura view` shows over SSH (see docs/live-view.md)."),
        Table(name: "metrics", about: "The metrics file for node_exporter's textfile collector (see docs/metrics.md)."),
        Table(name: "usb", about: "A USB drive that recordings go to while it is plugged in (see docs/storage.md)."),
        Table(name: "overlay", about: "A caption (date, time, camera) burned into every recorded frame."),
        Table(name: "encryption", about: "Recordings and photos encrypted to age recipients as they are written (see docs/evidence.md)."),
        Table(name: "health", about: "What the picture and the microphone are watched for (see docs/health.md)."),
        Table(name: "pressure", about: "Whether the recording steps down when the board is too hot or under-powered."),
        Table(name: "cameras.NAME", about: "One of several cameras, NAME its name (a-z, 0-9, _): it goes into the camera's file names, status, metrics and `obscura view --camera NAME`. Without such a table the kiosk records the profile's one camera."),
    ]

    public static let keys: [Key] = [
        key("board", "string", quoted(defaults.board), "a profile's name (`virtual`, `pi4b`, … in /usr/share/obscura/profiles) or the path of a profile file",
            quoted("pi4b"), "The board profile: its camera, encoder, buttons, LEDs and sensors."),
    ] + recording + audio + photo + preview + control + live + metrics + usb + overlay + encryption + health + pressure + cameras
}

extension ConfigurationReference {
    static let recording: [Key] = [
        key("recording.start", "string", quoted(defaults.recordingStart.rawValue), RecordingStart.allCases.map(\.rawValue).joined(separator: ", "),
            quoted("power-on"),
            "What starts a recording: the record button (or `obscura ctl record start`), or power-on: the service records from its start, with the segments and quota as set; the button still stops and starts it."),
        key("recording.folder", "string", quoted(defaults.recordingsFolder), path, quoted("/var/lib/obscura/recordings"),
            "Where finished recordings are kept."),
        key("recording.codec", "string", quoted(defaults.codec.rawValue), VideoCodec.allCases.map(\.rawValue).joined(separator: ", "), quoted("h264"),
            "The video codec. prores422 needs a 10-bit 4:2:2 camera; fwht (the test codec of the virtual board) is written as an elementary .fwht stream."),
        key("recording.container", "string", quoted(defaults.container.rawValue), "mp4, mov, mkv", quoted("mp4"),
            "The movie file's kind."),
        key("recording.size", "string", profiles, "WIDTHxHEIGHT, e.g. 1920x1080; the camera may adjust it (the journal says so)", quoted("1920x1080"),
            "The picture's size."),
        key("recording.frame_rate", "number", profiles, Limits.frameRate.allowed, "30",
            "Frames per second, set on the camera (or the nearest it allows). The recording steps down by itself when the board cannot keep up, and back up when it can."),
        key("recording.bit_rate", "integer", profiles, Limits.bitRate.allowed, "8000000",
            "The video's bits per second."),
        key("recording.segment_seconds", "integer", String(defaults.segmentSeconds), Limits.configSegmentSeconds.allowed, "300",
            "A new file every this many seconds while recording."),
        key("recording.fragment_seconds", "number", number(defaults.fragmentSeconds), Limits.fragmentSeconds.allowed, "0.5",
            "Each fragment of a file is synced to the storage when complete: a power cut loses about this much more than the encoder's latency."),
        key("recording.pre_record_seconds", "number", number(defaults.preRecordSeconds), Limits.configPreRecordSeconds.allowed, "5",
            "A recording starts with up to this many seconds from before the button was pressed."),
        key("recording.min_free_space_mb", "integer", String(defaults.minFreeSpaceBytes >> 20), Limits.freeSpaceMegabytes.allowed, "256",
            "Free space kept on the recordings' storage: a recording ends, finalized, before less is left."),
        key("recording.quota_mb", "integer", String(defaults.quotaBytes >> 20), Limits.quotaMegabytes.allowed, "20000",
            "Loop recording: past this much, the oldest finished recordings are deleted."),
        key("recording.partial_folder", "string", "`incoming` beside the recordings folder", "\(path) on the recordings' filesystem, not the recordings or photos folder",
            quoted("/var/lib/obscura/incoming"), "Where files being written are kept, until they are finished and renamed into their folder."),
    ]

    static let audio: [Key] = [
        key("audio.device", "string", profiles, "none, auto, or an ALSA device from `obscura devices`", quoted("auto"),
            "The microphone recorded with the picture."),
        key("audio.codec", "string", quoted(defaults.audioCodec.rawValue), "aac (mp4, mov, mkv) or opus (mkv only)", quoted("aac"),
            "The sound's codec."),
        key("audio.bit_rate", "integer", String(defaults.audioBitRate), Limits.audioBitRate.allowed, "96000",
            "The sound's bits per second."),
    ]

    static let photo: [Key] = [
        key("photo.folder", "string", quoted(defaults.photosFolder), path, quoted("/var/lib/obscura/photos"),
            "Where photos are kept."),
        key("photo.raw", "boolean", String(defaults.photoRaw), "true, false", "false",
            "Also a DNG beside each JPEG, from the camera's raw stream (when it has one; the journal says when it has not)."),
    ]

    static let preview: [Key] = [
        key("preview.enabled", "boolean", String(defaults.previewEnabled), "true, false", "true",
            "The camera on the attached display. Without a display the kiosk goes on headless."),
        key("preview.device", "string", "the first card with a connected display", "a DRM device, e.g. /dev/dri/card1", quoted("/dev/dri/card1"),
            "The display card."),
        key("preview.gravity", "string", quoted(defaults.previewGravity), "fit, fill, stretch", quoted("fit"),
            "How the picture fills the screen: whole with borders, cropped to fill, or stretched."),
        key("preview.rotation", "integer", String(defaults.previewRotation), "0, 90, 180, 270 (clockwise)", "0",
            "The picture turned on the screen."),
    ]

    static let control: [Key] = [
        key("control.socket", "string", quoted(defaults.controlSocket), path, quoted("/run/obscura/control.sock"),
            "The control socket (mode 0660, group obscura)."),
    ]

    static let live: [Key] = [
        key("live.socket", "string", quoted(defaults.liveSocket), "an absolute path, or \"\" for no live view", quoted("/run/obscura-live/live.sock"),
            "The socket the live view is served on (mode 0660, group obscura-view): only the SSH server's view account reaches it. No network port is opened."),
        key("live.max_viewers", "integer", String(defaults.liveViewers), Limits.liveViewers.allowed, "4",
            "Viewers at once; one more is refused with a message saying so."),
    ]

    static let metrics: [Key] = [
        key("metrics.file", "string", quoted(defaults.metricsFile), "an absolute path ending in .prom, or \"\" for none", quoted("/run/obscura-metrics/obscura.prom"),
            "Where the metrics are written, for node_exporter's textfile collector."),
        key("metrics.interval_seconds", "integer", String(defaults.metricsInterval), Limits.metricsInterval.allowed, "5",
            "How often the metrics file is rewritten."),
    ]

    static let usb: [Key] = [
        key("usb.drive", "string", "\"\" (none)", "LABEL=<filesystem label>, an absolute mount point, or \"\"", quoted("LABEL=OBSCURA"),
            "The drive recordings go to while it is plugged in; without it they go to recording.folder."),
        key("usb.folder", "string", quoted(drive.folder), "a folder relative to the drive's root", quoted("obscura/recordings"),
            "Where on the drive."),
        key("usb.quota_mb", "integer", String(drive.quotaBytes >> 20), Limits.quotaMegabytes.allowed, "0",
            "Loop recording on the drive."),
        key("usb.min_free_space_mb", "integer", String(drive.minFreeSpaceBytes >> 20), Limits.freeSpaceMegabytes.allowed, "256",
            "Free space kept on the drive."),
    ]
}

extension ConfigurationReference {
    static let overlay: [Key] = [
        key("overlay.enabled", "boolean", "false", "true, false", "true",
            "A caption burned into every recorded frame: the date and time, and a second line (the camera's name, a text)."),
        key("overlay.text", "string", quoted(caption.text), "any text", quoted("Front door"),
            "A text of one's own, on the second line."),
        key("overlay.camera_name", "boolean", String(defaults.overlayCameraName), "true, false", "true",
            "The camera's name on the second line."),
        key("overlay.position", "string", quoted(caption.position.rawValue), OverlaySettings.Position.allCases.map(\.rawValue).joined(separator: ", "),
            quoted("top-left"), "The corner the caption sits in."),
        key("overlay.size", "integer", String(caption.size), "0 (a 24th of the frame's height) or \(OverlaySettings.sizes.lowerBound) to \(OverlaySettings.sizes.upperBound) pixels",
            "0", "The text's height."),
        key("overlay.colour", "string", quoted("white"), "#rrggbb or \(RGB.named.keys.sorted().joined(separator: ", "))", quoted("white"),
            "The text's colour."),
        key("overlay.background", "string", quoted(caption.background.rawValue), OverlaySettings.Background.allCases.map(\.rawValue).joined(separator: ", "),
            quoted("box"), "An opaque box behind the text, or an outline around it."),
        key("overlay.font", "string", quoted(OverlaySettings.defaultFont), "a TrueType font file", quoted(OverlaySettings.defaultFont),
            "The caption's font."),
        key("overlay.preview", "boolean", String(defaults.overlayOnPreview), "true, false", "false",
            "The preview shows the caption too."),
        key("overlay.photos", "boolean", String(defaults.overlayOnPhotos), "true, false", "true",
            "Photos carry the caption too (the JPEG; a DNG stays as the sensor gave it)."),
    ]

    static let encryption: [Key] = [
        key("encryption.recipients", "list of strings", "[] (not encrypted)", "age X25519 public keys (age1…, from age-keygen)",
            list(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"]),
            "Recordings and photos are encrypted to these as they are written (FILE.age); the kiosk cannot read them back."),
        key("encryption.recipients_file", "string", "\"\" (none)", "an absolute path of a file of age1… recipients, one per line (`age -R`'s format)",
            quoted("/etc/obscura/recipients.txt"), "More recipients, from a file."),
        key("encryption.align_to_chunks", "boolean", String(defaults.alignsToAgeChunks), "true, false", "false",
            "Fragments end on age's 64 KiB chunks, so that `age -d` of a recording cut by a power cut gives whole fragments (costs filler)."),
    ]

    static let health: [Key] = [
        key("health.enabled", "boolean", "true", "true, false", "true",
            "false: neither the picture nor the microphone is watched."),
        key("health.conditions", "list of strings", profiles, PictureHealthSettings.conditionNames.joined(separator: ", "),
            list(PictureHealthSettings.conditionNames),
            "What the picture is watched for. covered, partly_covered, defocused and redirected are judged against the scene the camera learned in its first 30 s (kept in the state directory across restarts)."),
        key("health.dark_luma", "number", number(picture.darkLuma), Limits.darkLuma.allowed, number(picture.darkLuma),
            "A mean luma at or below this is dark (black is 16)."),
        key("health.flat_detail", "number", number(picture.flatDetail), Limits.flatDetail.allowed, number(picture.flatDetail),
            "Neighbouring points differing by at most this: no detail (a covered lens)."),
        key("health.hold_seconds", "number", seconds(picture.hold), Limits.conditionSeconds.allowed, seconds(picture.hold),
            "A condition holds this long before it is declared."),
        key("health.clear_seconds", "number", seconds(picture.clearAfter), Limits.conditionSeconds.allowed, seconds(picture.clearAfter),
            "And is gone this long before it clears."),
        key("health.frames_per_second", "number", number(picture.framesPerSecond), Limits.healthFramesPerSecond.allowed, number(picture.framesPerSecond),
            "Frames looked at a second; the others pass untouched."),
        key("health.sound_conditions", "list of strings", list(SoundCondition.allCases.map(\.rawValue)), "\(SoundCondition.allCases.map(\.rawValue).joined(separator: ", ")); [] : the microphone is not listened to",
            list(SoundCondition.allCases.map(\.rawValue)), "What the microphone is listened for."),
        key("health.silence_dbfs", "number", number(sound.silenceDBFS), Limits.silenceDBFS.allowed, number(sound.silenceDBFS),
            "Sound swinging at most this far is silent (digital silence, a stuck level)."),
        key("health.clip_share", "number", number(sound.clipShare), Limits.clipShare.allowed, number(sound.clipShare),
            "This share of samples at full scale is clipping."),
    ]

    static let pressure: [Key] = [
        key("pressure.enabled", "boolean", "true", "true, false", "true",
            "false: the board's pressure is read and shown, and nothing steps down."),
        key("pressure.settle_seconds", "number", seconds(PressureConfiguration().settle), Limits.settleSeconds.allowed, "30",
            "A lower level is taken once the readings have allowed it this long."),
    ]

    static let cameras: [Key] = [
        key("cameras.NAME.id", "string", "(required)", "a camera's id as `obscura devices` lists it; each camera once",
            quoted("platform/vimc.1 Sensor B"), "The camera."),
        key("cameras.NAME.size", "string", "[recording]'s, else " + profiles, "WIDTHxHEIGHT", quoted("1280x720"),
            "The size this camera records at."),
        key("cameras.NAME.frame_rate", "number", "[recording]'s, else " + profiles, Limits.frameRate.allowed, "15",
            "The frame rate this camera is set to."),
        key("cameras.NAME.bit_rate", "integer", "[recording]'s, else " + profiles, Limits.bitRate.allowed, "4000000",
            "This camera's video bit rate (bits a second)."),
        key("cameras.NAME.encoders", "list of strings", profiles, BoardProfile.encoderNames.joined(separator: ", "), list(["libx264"]),
            "The encoders this camera's recordings try, in order (e.g. one camera on the hardware encoder, the other in software)."),
        key("cameras.NAME.record_button", "string", "none", "a line name of the profile's GPIO chip, not another camera's", quoted("GPIO22"),
            "A button that starts and stops this camera alone (the record button records all)."),
    ]
}
