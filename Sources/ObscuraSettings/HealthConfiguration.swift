import ObscuraHealth
import ObscuraSystem
import ObscuraTOML

/// The `[health]` table: what the kiosk watches its picture and its
/// microphone for, and how sure it must be before it says so.
///
/// ```toml
/// [health]
/// enabled = true                  # false: the picture is not watched
/// conditions = ["dark", "no_detail", "frozen", "covered", "partly_covered", "defocused", "redirected"]  # default: the board profile's
/// dark_luma = 24                  # mean luma at or below this is dark (black is 16)
/// flat_detail = 2.5               # neighbouring points differing by at most this: no detail
/// hold_seconds = 10               # a condition holds this long before it is declared
/// clear_seconds = 2               # and is gone this long before it clears
/// frames_per_second = 5           # frames looked at a second (the rest pass untouched)
/// sound_conditions = ["silent", "clipping"]  # [] : the microphone is not listened to
/// silence_dbfs = -90              # sound swinging at most this far is silent (digital silence, a stuck level)
/// clip_share = 0.001              # this share of samples at full scale is clipping
/// ```
/// The `[pressure]` table: whether the recording steps down under the
/// system's pressure (its sources and thresholds are the board profile's).
///
/// ```toml
/// [pressure]
/// enabled = true        # false: the level is read and shown, nothing steps down
/// settle_seconds = 30   # a lower level is taken once the readings allowed it this long
/// ```
public struct PressureConfiguration: Sendable, Equatable {
    public var stepsDown = true
    public var settle: Duration = .seconds(30)

    public init() {}

    public init(reading reader: TOMLReader) throws(ConfigurationError) {
        stepsDown = try reader.bool("pressure.enabled") ?? true
        if let s = try reader.double("pressure.settle_seconds", Limits.settleSeconds) { settle = .checkedSeconds(s) }
    }
}

public struct HealthConfiguration: Sendable, Equatable {
    /// The settings, the watched conditions still to be narrowed by the profile; nil: not watched.
    public var picture: PictureHealthSettings? = PictureHealthSettings()
    /// The conditions the configuration names; nil: the profile's.
    public var conditions: Set<PictureCondition>?
    public var tampering: Set<TamperCondition>?
    /// The microphone's settings; nil: not listened to.
    public var sound: SoundHealthSettings? = SoundHealthSettings()

    public init() {}

    public init(reading reader: TOMLReader, file path: String) throws(ConfigurationError) {
        var s = PictureHealthSettings()
        let enabled = try reader.bool("health.enabled") ?? true
        if let names = try reader.strings("health.conditions", allowed: PictureHealthSettings.conditionNames) {
            conditions = Set(names.compactMap(PictureCondition.init(rawValue:)))
            tampering = Set(names.compactMap(TamperCondition.init(rawValue:)))
        }
        s.darkLuma = try reader.double("health.dark_luma", Limits.darkLuma) ?? s.darkLuma
        s.flatDetail = try reader.double("health.flat_detail", Limits.flatDetail) ?? s.flatDetail
        if let hold = try reader.double("health.hold_seconds", Limits.conditionSeconds) { s.hold = .checkedSeconds(hold) }
        if let clear = try reader.double("health.clear_seconds", Limits.conditionSeconds) { s.clearAfter = .checkedSeconds(clear) }
        s.framesPerSecond = try reader.double("health.frames_per_second", Limits.healthFramesPerSecond) ?? s.framesPerSecond
        picture = enabled ? s : nil
        var heard = SoundHealthSettings()
        if let names = try reader.strings("health.sound_conditions", allowed: SoundCondition.allCases.map(\.rawValue)) {
            heard.watched = Set(names.compactMap(SoundCondition.init(rawValue:)))
        }
        heard.silenceDBFS = try reader.double("health.silence_dbfs", Limits.silenceDBFS) ?? heard.silenceDBFS
        heard.clipShare = try reader.double("health.clip_share", Limits.clipShare) ?? heard.clipShare
        (heard.hold, heard.clearAfter) = (s.hold, s.clearAfter)
        sound = enabled && !heard.watched.isEmpty ? heard : nil
    }

    /// The settings for a board: the configuration's conditions, else the
    /// profile's (a camera whose picture is a still test pattern leaves
    /// `frozen` out). Nil when nothing is watched.
    public func settings(for profile: BoardProfile) -> PictureHealthSettings? {
        guard var s = picture else { return nil }
        s.watched = conditions ?? profile.pictureConditions
        s.tampering = tampering ?? profile.tamperConditions
        return s.watched.isEmpty && s.tampering.isEmpty ? nil : s
    }
}
