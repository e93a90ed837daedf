import Foundation

/// What the picture and sound watches share when one of their conditions is
/// declared or cleared: said once each way in the journal (a warning when
/// declared) and in the recording's marks, listed in `obscura status` with
/// its episodes counted (the metrics read them there), shown on the LED.
extension RecorderService {
    struct ConditionChange {
        /// "picture" or "sound".
        let watch: String
        let name: String
        /// The condition in words, for when it is declared.
        let described: String
        let declared: Bool
        /// When it was decided (ns, the frames' or the samples' clock).
        let at: UInt64
        /// Declared: when it began; cleared: how long it lasted (ns).
        let since: UInt64
        /// What was measured, in words.
        let seen: String
    }

    func conditionChanged(_ change: ConditionChange, listed: WritableKeyPath<ServiceStatus, [String]?>,
                          episodes: WritableKeyPath<ServiceStatus, [String: Int]>) {
        var conditions = Set(status[keyPath: listed] ?? [])
        let said: String
        if change.declared {
            conditions.insert(change.name)
            status[keyPath: episodes][change.name, default: 0] += 1
            said = "\(change.watch): \(change.described) for \(Self.seconds(change.at &- change.since)) s (\(change.seen))"
            logger.warning("\(said); recording goes on")
        } else {
            conditions.remove(change.name)
            said = "\(change.watch): \(change.name) cleared after \(Self.seconds(change.since)) s (\(change.seen))"
            logger.notice("\(said)")
        }
        opened?.movie.mark(said, sensorTime: change.at)
        status[keyPath: listed] = conditions.sorted()
        showLEDs()
    }

    private static func seconds(_ nanoseconds: UInt64) -> String { String(format: "%.1f", Double(nanoseconds) / 1e9) }
}
