import Foundation

/// One watch's conditions (the picture's or the sound's): what it is
/// watched for (nil: not watched), what is declared now (nil until the
/// first change), and how often each was declared since the start.
struct WatchedConditions: Sendable, Equatable {
    private(set) var watched: [String]?
    private(set) var declared: [String]?
    private(set) var episodes: [String: Int] = [:]

    var attention: Bool { !(declared ?? []).isEmpty }

    /// Watched afresh (a camera's new session) for `names`: what was
    /// declared before, which no longer is.
    mutating func watch(_ names: [String]?) -> [String] {
        watched = names
        guard let held = declared, !held.isEmpty else { return [] }
        declared = []
        return held
    }

    mutating func change(_ name: String, declared isDeclared: Bool) {
        var now = Set(declared ?? [])
        if isDeclared {
            now.insert(name)
            episodes[name, default: 0] += 1
        } else {
            now.remove(name)
        }
        declared = now.sorted()
    }
}

/// The health room's conditions: the picture's and the sound's.
struct HealthConditions: Sendable, Equatable {
    var picture = WatchedConditions()
    var sound = WatchedConditions()

    var attention: Bool { picture.attention || sound.attention }

    /// Into `status`: what `obscura status` and the metrics show.
    func show(in status: inout ServiceStatus) {
        status.pictureWatched = picture.watched
        status.pictureConditions = picture.declared
        status.pictureEpisodes = picture.episodes
        status.soundWatched = sound.watched
        status.soundConditions = sound.declared
        status.soundEpisodes = sound.episodes
    }
}

/// What the picture and sound watches share when one of their conditions is
/// declared or cleared: said once each way in the journal (a warning when
/// declared) and in the recording's marks, listed in `obscura status` with
/// its episodes counted (the metrics read them there), shown on the LED.
extension RecorderService {
    func conditionChanged(_ change: ConditionChange, in watch: WritableKeyPath<HealthConditions, WatchedConditions>) {
        conditions[keyPath: watch].change(change.name, declared: change.declared)
        let said: String
        if change.declared {
            said = "\(change.watch): \(change.described) for \(Self.seconds(change.at &- change.since)) s (\(change.seen))"
            logger.warning("\(said); recording goes on")
        } else {
            said = "\(change.watch): \(change.name) cleared after \(Self.seconds(change.since)) s (\(change.seen))"
            logger.notice("\(said)")
        }
        opened?.movie.mark(said, sensorTime: change.at)
        showLEDs()
    }

    private static func seconds(_ nanoseconds: UInt64) -> String { String(format: "%.1f", Double(nanoseconds) / 1e9) }
}
