import Foundation
import ObscuraHealth

/// The coordinator's sound watch: the microphone's buffers summed up where
/// they are captured (`SoundSampler`), followed window by window on the
/// health thread (`SoundHealth`), the conditions it declares and clears
/// said in the journal, `obscura status`, the metrics, the status LED and
/// the recording's marks, like the picture's. The recording never stops for one.
extension RecorderService {
    /// Follows `opened`'s microphone until its session stops.
    func listenToSound(_ opened: CameraSetup.Opened) {
        guard let sound = opened.sound else {
            _ = conditions.sound.watch(nil)
            return
        }
        let settings = sound.settings
        let held = conditions.sound.watch(settings.watched.map(\.rawValue).sorted())
        if !held.isEmpty {
            logger.notice("sound: listened to afresh on the camera's new session (\(held.joined(separator: ", ")) no longer declared)")
            showLEDs()
        }
        let samples = sound.sampler.samples
        Task.detached(executorPreference: healthWork) { [weak self] in
            var health = SoundHealth(settings: settings)
            var measured: UInt64?
            for await sample in samples {
                let changes = health.hear(sample)
                for change in changes { await self?.soundChanged(change) }
                // The loudest sample in the status about once a second.
                if let m = health.last, sample.time >= (measured ?? 0) &+ 1_000_000_000 {
                    measured = sample.time
                    await self?.soundMeasured(m)
                }
            }
        }
    }

    func soundMeasured(_ measure: SoundMeasure) {
        status.soundPeak = measure.peakDBFS.isFinite ? (measure.peakDBFS * 10).rounded() / 10 : nil
    }

    /// A condition declared or cleared: said once each way.
    func soundChanged(_ change: SoundHealth.Change) { conditionChanged(ConditionChange(change), in: \.sound) }
}
