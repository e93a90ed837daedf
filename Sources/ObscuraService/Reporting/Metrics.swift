import Foundation
import ObscuraFormats
import ObscuraSystem
import ObscuraFiles
import ObscuraHealth

extension HostHealth {
    /// Reads it now: the thermal zones (or the board profile's
    /// `temperatureFiles`), the firmware's throttled flags (at the profile's
    /// `throttledFile`) and the clock. `root` prefixes every path of the
    /// system's own (tests give a folder). One read a round serves the status,
    /// the metrics and the system pressure (`pressureReading`).
    public static func read(root: String = "", temperatureFiles: [String]? = nil,
                            throttledFile: String = BoardProfile.firmwareThrottledFile) -> HostHealth {
        var h = HostHealth()
        let thermal = root + "/sys/class/thermal"
        let files = temperatureFiles ?? ((try? FileManager.default.contentsOfDirectory(atPath: thermal)) ?? [])
            .filter { $0.hasPrefix("thermal_zone") }.sorted().map { thermal + "/" + $0 + "/temp" }
        for file in files {
            guard let milli = firstLine(file).flatMap(Double.init) else { continue }
            let zone = (file as NSString).deletingLastPathComponent
            var name = firstLine(zone + "/type") ?? (zone as NSString).lastPathComponent
            if h.temperatures[name] != nil { name += "-" + (zone as NSString).lastPathComponent }
            h.temperatures[name] = milli / 1000
        }
        if let text = firstLine(root + throttledFile) {
            h.throttled = Int(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: 16)
        }
        let clock = SystemClock.synchronization(root: root)
        h.clockSynchronized = clock.synchronized
        h.clockSource = clock.source.rawValue
        return h
    }

    /// What the system pressure judges of it: the hottest zone and the flags.
    var pressureReading: PressureReading {
        PressureReading(celsius: temperatures.values.max(), throttled: throttled)
    }

    static func firstLine(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
        return line?.trimmingCharacters(in: .whitespaces)
    }
}


extension ServiceStatus {
    /// The status as metrics, every name prefixed `obscura_`.
    public var metricsText: String {
        var m = MetricsText()
        addMetrics(to: &m)
        return m.text
    }

    /// This status's families into `m` (under `m`'s labels: a kiosk's cameras
    /// each under its `camera` label, in one text).
    public func addMetrics(to m: inout MetricsText) {
        let b = { (x: Bool) in x ? 1.0 : 0.0 }
        m.add("obscura_state", .gauge, "1 for the state the recorder is in.",
              ServiceState.names.map { ([("state", $0)], b(state == $0)) })
        m.add("obscura_frames_total", .counter, "Video frames written to recordings since the service started.", Double(framesTotal))
        m.add("obscura_recording_frames", .gauge, "Video frames in the recording in progress (0 when not recording).", Double(frames))
        m.add("obscura_recording_frames_per_second", .gauge, "Frame rate of the recording in progress, measured from the camera's timestamps.", framesPerSecond)
        m.add("obscura_dropped_frames_total", .counter, "Frames recordings lack because the encoder fell behind.", Double(droppedFramesTotal))
        m.add("obscura_skipped_frames_total", .counter, "Frames recordings lack because the camera never delivered them.", Double(skippedFramesTotal))
        m.add("obscura_paced_frames_total", .counter, "Frames left out evenly to step a recording down (a camera without frame-rate control).", Double(pacedFramesTotal))
        m.add("obscura_encoder_latency_seconds", .gauge, "Mean time from a frame going into the video encoder to its packet coming out (last half second with packets).", encoderLatencySeconds)
        m.add("obscura_camera_to_file_seconds", .gauge, "Longest time from a frame's sensor timestamp to its packet being handed to the file (last half second with frames); a power cut loses about this plus the storage's sync.", cameraToFileSeconds)
        m.add("obscura_frames_in_encoder", .gauge, "Frames inside the video encoder with no packet out yet.", Double(framesInEncoder))
        if let rate = cameraFrameRate, let configured = configuredFrameRate {
            m.add("obscura_camera_frame_rate", .gauge, "The frame rate asked of the camera: below the configured one while the recorder could not keep up.", rate)
            m.add("obscura_configured_frame_rate", .gauge, "The configured frame rate.", configured)
            m.add("obscura_frame_rate_steps_total", .counter, "Steps of the camera's frame rate: down when the recorder fell behind, up when it kept up again.",
                  [([("direction", "down")], Double(rateStepsDown ?? 0)), ([("direction", "up")], Double(rateStepsUp ?? 0))])
        }
        m.add("obscura_written_bytes_total", .counter, "Bytes of recordings written since the service started.", Double(bytesTotal))
        m.add("obscura_recordings_finished_total", .counter, "Recording files finished (each segment counts).", Double(recordings))
        m.add("obscura_recordings_failed_total", .counter, "Recordings ended by a failure (disk full, camera lost, encoder error); what they held is finalized.", Double(recordingsFailed))
        m.add("obscura_photos_total", .counter, "Photos taken.", Double(photos))
        // (0 with no live view: a series that is always there.)
        m.add("obscura_live_viewers", .gauge, "Live viewers watching now (obscura view).", Double(liveViewers ?? 0))
        m.add("obscura_live_sent_bytes_total", .counter, "Bytes of video sent to live viewers since the service started.", Double(liveBytes ?? 0))
        m.add("obscura_live_skips_total", .counter, "Times a live viewer fell behind and skipped ahead to a key frame.", Double(liveSkips ?? 0))
        if let at = lastErrorTime, let reason = lastErrorReason {
            m.add("obscura_last_error_timestamp_seconds", .gauge,
                  "When the last error happened (Unix time); the label says what kind (the journal and obscura status say what).",
                  [([("reason", reason)], at)])
        }
        m.add("obscura_errors_total", .counter, "Errors since the service started, by kind.",
              ErrorReason.allCases.map { ([("reason", $0.rawValue)], Double(errors[$0.rawValue] ?? 0)) })
        let stages = stageRestarts.keys.sorted()
        m.add("obscura_stage_restarts_total", .counter, "Times a stalled or vanished stage (camera, encoder, storage) was restarted.",
              stages.map { ([("stage", $0)], Double(stageRestarts[$0] ?? 0)) })
        m.add("obscura_stage_gap_seconds_total", .counter, "Time without recording while a stage was being restarted.",
              stages.map { ([("stage", $0)], stageGapSeconds[$0] ?? 0) })
        m.add("obscura_storage_free_bytes", .gauge, "Free space on each storage's filesystem.",
              storages.compactMap { s in s.freeBytes.map { ([("storage", s.name), ("path", s.path)], Double($0)) } })
        m.add("obscura_storage_used_bytes", .gauge, "Finished recordings and photos on each storage.",
              storages.map { ([("storage", $0.name), ("path", $0.path)], Double($0.usedBytes)) })
        m.add("obscura_storage_quota_bytes", .gauge, "Each storage's quota (0: none).",
              storages.map { ([("storage", $0.name), ("path", $0.path)], Double($0.quotaBytes)) })
        m.add("obscura_storage_present", .gauge, "1 when the storage is there to record to (a drive can be absent).",
              storages.map { ([("storage", $0.name), ("path", $0.path)], $0.present ? 1 : 0) })
        m.add("obscura_storage_active", .gauge, "1 for the storage recordings go to now.",
              storages.map { ([("storage", $0.name), ("path", $0.path)], $0.active ? 1 : 0) })
        m.add("obscura_soc_temperature_celsius", .gauge, "Each thermal zone's temperature.",
              host.temperatures.keys.sorted().map { ([("zone", $0)], host.temperatures[$0] ?? 0) })
        if let flags = host.throttled {
            m.add("obscura_throttled", .gauge, "The Raspberry Pi firmware's throttled flags, one per condition (as vcgencmd get_throttled).",
                  HostHealth.throttledFlags.map { ([("condition", $0.name)], b(flags & (1 << $0.bit) != 0)) })
        }
        if let watched = pictureWatched {
            let now = Set(pictureConditions ?? [])
            m.add("obscura_picture_condition", .gauge, "1 while the picture has the condition (dark, no_detail: covered or facing something flat, frozen), declared after its hold time.",
                  watched.map { ([("condition", $0)], b(now.contains($0))) })
            m.add("obscura_picture_condition_episodes_total", .counter, "Times each picture condition was declared since the service started.",
                  watched.map { ([("condition", $0)], Double(pictureEpisodes[$0] ?? 0)) })
        }
        if let watched = soundWatched {
            let now = Set(soundConditions ?? [])
            m.add("obscura_sound_condition", .gauge, "1 while the microphone's sound has the condition (silent: digital silence or one level held; clipping), declared after its hold time.",
                  watched.map { ([("condition", $0)], b(now.contains($0))) })
            m.add("obscura_sound_condition_episodes_total", .counter, "Times each sound condition was declared since the service started.",
                  watched.map { ([("condition", $0)], Double(soundEpisodes[$0] ?? 0)) })
        }
        m.add("obscura_system_pressure", .gauge, "1 for the system's pressure level now (nominal, fair, serious, critical: from the temperature, the firmware's throttling and the recorder's backlog).",
              PressureLevel.allCases.map { ([("level", $0.name)], b(pressureLevel == $0.name)) })
        m.add("obscura_system_pressure_steps_total", .counter, "Steps of the system's pressure level since the service started (direction up or down).",
              ["down", "up"].map { ([("direction", $0)], Double(pressureSteps[$0] ?? 0)) })
        m.add("obscura_clock_synchronized", .gauge, "1 when the system clock is known to be synchronised; the label says what told.",
              [([("source", host.clockSource)], b(host.clockSynchronized == true))])
    }
}

