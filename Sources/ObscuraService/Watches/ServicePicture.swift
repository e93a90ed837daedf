import Foundation
import Logging
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
        let held = conditions.picture.watch(settings.watchedNames)
        if !held.isEmpty {
            // A camera opened afresh is watched afresh.
            logger.notice("picture: watched afresh on the camera's new session (\(held.joined(separator: ", ")) no longer declared)")
            showLEDs()
        }
        let size = opened.session.activeConfiguration?.streams.first?.size
        let store = settings.tampering.isEmpty ? nil
            : SceneReferenceStore(camera: opened.device.uniqueID, name: configuration.cameraName,
                                  width: size?.width ?? 0, height: size?.height ?? 0)
        // The samples hold no frame: the camera's buffers are never held
        // while a change waits for the service.
        let samples = picture.sampler.samples
        Task.detached(executorPreference: healthWork) { [weak self, logger] in
            var health = PictureHealth(settings: settings)
            let loaded = store?.load()
            if let note = loaded?.note { logger.warning("picture: \(note)") }
            var tamper = TamperWatch(settings: settings.tamper, columns: settings.grid.columns, rows: settings.grid.rows,
                                     reference: loaded?.reference)
            var saver = SceneReferenceSaver(store: store, logger: logger, learned: tamper.isLearned)
            var measured: UInt64?
            for await sample in samples {
                let changes = health.look(points: sample.points, at: sample.time)
                for change in changes { await self?.pictureChanged(change) }
                if let fine = sample.fine {
                    let dark = health.declared.contains(.dark) || (health.last?.mean ?? 255) <= settings.darkLuma
                    for change in tamper.look(points: sample.points, fine: fine, at: sample.time, dark: dark) {
                        await self?.tamperChanged(change)
                    }
                    saver.looked(tamper, at: sample.time)
                }
                // The measures in the status about once a second.
                if let m = health.last, sample.time >= (measured ?? 0) &+ 1_000_000_000 {
                    measured = sample.time
                    await self?.pictureMeasured(m, scene: tamper.last, learned: settings.tampering.isEmpty ? nil : tamper.isJudging == true)
                }
            }
            saver.save(tamper)
        }
    }

    func pictureMeasured(_ measure: PictureMeasure, scene: SceneComparison?, learned: Bool?) {
        status.pictureMean = (measure.mean * 10).rounded() / 10
        status.pictureDetail = (measure.detail * 100).rounded() / 100
        if let scene {
            status.sceneLikeness = (scene.layout * 100).rounded() / 100
            status.sceneSharpness = (scene.sharpness * 100).rounded() / 100
        }
        status.sceneLearned = learned
    }

    /// A tampering condition declared or cleared: said as the picture's are.
    func tamperChanged(_ change: TamperWatch.Change) { conditionChanged(ConditionChange(change), in: \.picture) }

    /// A condition declared or cleared: said once each way.
    func pictureChanged(_ change: PictureHealth.Change) { conditionChanged(ConditionChange(change), in: \.picture) }
}
