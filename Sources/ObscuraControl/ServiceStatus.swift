#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `obscura status` shows.
public struct ServiceStatus: Sendable, Codable, Equatable {
    public var state = "starting"
    public var board = ""
    public var camera: String?
    public var file: String?
    public var elapsedSeconds = 0.0
    public var bytes = 0
    public var droppedFrames = 0
    public var freeBytes: Int?
    /// The flash's mode: auto, on or off.
    public var flash = "auto"
    public var lastError: String?
    public var lastRecording: String?
    public var recordings = 0
    public var photos = 0
    public var preRecordSeconds = 0.0
    /// The preview's state ("showing on …", "headless: …"), when enabled.
    public var preview: String?
    /// The microphone recorded beside the video, or why there is none.
    public var audio: String?
    /// The live view, when served: viewers now, bytes sent to viewers and
    /// their skips to a key frame since the start.
    public var liveViewers: Int?
    public var liveBytes: Int?
    public var liveSkips: Int?
    /// Frames in the recording in progress, and its measured frame rate.
    public var frames = 0
    public var framesPerSecond = 0.0
    /// Since the service started: frames and bytes written, frames missing.
    public var framesTotal = 0
    public var bytesTotal = 0
    public var droppedFramesTotal = 0
    public var skippedFramesTotal = 0
    /// Frames left out evenly to step a recording down, for a camera with
    /// no frame-rate control: in the recording in progress, and since the start.
    public var pacedFrames = 0
    public var pacedFramesTotal = 0
    /// Frame in to packet out of the video encoder (mean, seconds), and the
    /// frames inside it now.
    public var encoderLatencySeconds = 0.0
    /// The longest time, over the last half second, from a frame's sensor
    /// timestamp to its packet being handed to the file.
    public var cameraToFileSeconds = 0.0
    public var framesInEncoder = 0
    /// Recordings ended by a failure (finalized all the same).
    public var recordingsFailed = 0
    /// When `lastError` happened (Unix time), and which kind it was (one of
    /// `ErrorReason`'s: the metrics' label, bounded where the text is not).
    public var lastErrorTime: Double?
    public var lastErrorReason: String?
    /// Errors since the service started, by `ErrorReason`.
    public var errors: [String: Int] = [:]
    /// Stage restarts ("camera", "encoder", "storage") and the time each
    /// stage's restarts left unrecorded.
    public var stageRestarts: [String: Int] = [:]
    public var stageGapSeconds: [String: Double] = [:]
    public var storages: [StorageStatus] = []
    public var host = HostHealth()
    /// Whether the camera is gone (lost, not yet back); optional, so that a
    /// status from a service without it still decodes.
    public var cameraDown: Bool?
    /// The frame rate asked of the camera, and the configured one: lower
    /// while the recorder could not keep up (`PaceGovernor`); the steps
    /// taken down and up since the service started (optional, so that a
    /// status from a service without them still decodes).
    public var cameraFrameRate: Double?
    public var configuredFrameRate: Double?
    public var rateStepsDown: Int?
    public var rateStepsUp: Int?
    /// Where the metrics file is written, or why it is not.
    public var metrics: String?
    /// What the picture is watched for (nil: not watched), the conditions
    /// declared now, the episodes of each since the start, and the last
    /// measures (mean luma, detail).
    public var pictureWatched: [String]?
    public var pictureConditions: [String]?
    public var pictureEpisodes: [String: Int] = [:]
    public var pictureMean: Double?
    public var pictureDetail: Double?
    /// Tampering: whether the scene is learned (judged against from then),
    /// and the last look against it: the layout's likeness (1: as usual)
    /// and the sharpness (1: as sharp as usual).
    public var sceneLearned: Bool?
    public var sceneLikeness: Double?
    public var sceneSharpness: Double?
    /// What the microphone is listened for (nil: not listened to), the
    /// conditions declared now, how often each was, and the last window's
    /// loudest sample (dBFS; nil when all zero).
    public var soundWatched: [String]?
    public var soundConditions: [String]?
    public var soundEpisodes: [String: Int] = [:]
    public var soundPeak: Double?
    /// The system's pressure (nominal, fair, serious, critical), what made
    /// it (nil at nominal), and its steps up and down since the start.
    public var pressureLevel = "nominal"
    public var pressureReason: String?
    public var pressureSteps: [String: Int] = [:]
    /// The bit rate asked of the encoder for the recording in progress (or
    /// the last one); nil: the encoder's own.
    public var bitRate: Int?
    /// The recording in progress's first frame, as its camera's sensor
    /// timed it (CLOCK_MONOTONIC, seconds).
    public var recordingTimeZero: Double?
    /// A kiosk with several cameras (`[cameras.NAME]`): each camera's own
    /// status; the fields above are the first camera's, with `state` the
    /// kiosk's (recording while any camera records).
    public var cameras: [CameraStatus]?
    /// How far apart the recording cameras' first frames were (ms), and the
    /// last record press or command (CLOCK_MONOTONIC, seconds).
    public var startSkewMilliseconds: Double?
    public var recordPressed: Double?

    public init() {}
}

/// One of a kiosk's cameras in `ServiceStatus.cameras`.
public struct CameraStatus: Sendable, Codable, Equatable {
    public var name: String
    public var status: ServiceStatus

    public init(name: String, status: ServiceStatus) {
        self.name = name
        self.status = status
    }
}
