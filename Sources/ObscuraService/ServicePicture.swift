import Foundation
import ObscuraCapture
import ObscuraHealth
import ObscuraMedia

/// The coordinator's picture watch: grid samples taken as the camera's
/// frames pass (`PictureSampler`), followed on the picture thread
/// (`PictureHealth`), the conditions it declares and clears
/// said in the journal, `obscura status`, the metrics and the status LED.
/// The recording never stops for one.
extension RecorderService {
    /// Follows `opened`'s picture until its session stops.
    func watchPicture(_ opened: CameraSetup.Opened) {
        guard let picture = opened.picture else { return }
        let settings = picture.settings
        status.pictureWatched = settings.watched.map(\.rawValue).sorted()
        if let held = status.pictureConditions, !held.isEmpty {
            // A camera opened afresh is watched afresh.
            logger.notice("picture: watched afresh on the camera's new session (\(held.joined(separator: ", ")) no longer declared)")
            status.pictureConditions = []
            showLEDs()
        }
        // The samples hold no frame: the camera's buffers are never held
        // while a change waits for the service.
        let samples = picture.sampler.samples
        Task.detached(executorPreference: healthWork) { [weak self] in
            var health = PictureHealth(settings: settings)
            var measured: UInt64?
            for await sample in samples {
                let changes = health.look(points: sample.points, at: sample.time)
                for change in changes { await self?.pictureChanged(change) }
                // The measures in the status about once a second.
                if let m = health.last, sample.time >= (measured ?? 0) &+ 1_000_000_000 {
                    measured = sample.time
                    await self?.pictureMeasured(m)
                }
            }
        }
    }

    func pictureMeasured(_ measure: PictureMeasure) {
        status.pictureMean = (measure.mean * 10).rounded() / 10
        status.pictureDetail = (measure.detail * 100).rounded() / 100
    }

    /// A condition declared or cleared: said once each way.
    func pictureChanged(_ change: PictureHealth.Change) {
        let m = change.measure
        conditionChanged(ConditionChange(watch: "picture", name: change.condition.rawValue, described: Self.described(change.condition),
                                         declared: change.declared, at: change.at, since: change.since,
                                         seen: String(format: "mean luma %.1f, detail %.2f", m.mean, m.detail)),
                         listed: \.pictureConditions, episodes: \.pictureEpisodes)
    }

    static func described(_ condition: PictureCondition) -> String {
        switch condition {
        case .dark: "dark (the lens sees almost no light)"
        case .noDetail: "no_detail (the lens covered, or facing something flat)"
        case .frozen: "frozen (the same picture while the camera's timestamps run on)"
        }
    }
}
