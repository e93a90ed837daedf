import Foundation
import Logging
import ObscuraCamera
import ObscuraSystem
import ObscuraFiles

/// Where recordings go: the SD card's folder (`recording.folder`), or the
/// USB drive's (`[usb]`) while it is there, writable and answering; the
/// failover between them, loop recording's cleanup, the storages'
/// measurements and the renames once the clock is known.
///
/// An actor on the file thread: its folder scans, unlinks and statvfs never
/// run on Swift's pool (a slow card holds up this room, not the buttons,
/// status or control). The drive's calls go to the drive's own thread with a
/// deadline, so a drive that hangs rather than vanishes holds up neither the
/// card nor this room: it is given up on, and recordings go to the card.
actor StorageTargets {
    struct Target: Sendable {
        let folder: String
        let incoming: String
        let keeper: StorageKeeper
        let minFree: Int
        let onDrive: Bool
    }

    /// A recording's storage, or why there is none (the card too full).
    enum Choice: Sendable {
        case record(Target)
        case full(String)
    }

    /// What a look for the drive found that the recorder must act on.
    enum DriveNews: Sendable, Equatable {
        /// The drive a recording is on went away: stop it (what can be
        /// finalized is), and it goes on on the card.
        case goneUnderRecording
        /// Mounted but not writable by the service (an error to report).
        case unwritable(String)
    }

    private let configuration: ServiceConfiguration
    private let logger: Logger
    private let cardKeeper: StorageKeeper
    private let fileWork: ThreadExecutor
    private let driveWork: ThreadExecutor
    private let clock: any WaitingClock
    nonisolated var unownedExecutor: UnownedSerialExecutor { fileWork.asUnownedSerialExecutor() }

    /// Where the drive was last seen, and whether its folders could be made.
    private var presence: DriveConfiguration.Presence?
    private var driveUsable = false
    /// The drive was given up on for not answering (not for going away):
    /// recordings go to it again once it answers.
    private var driveHung = false
    /// The drive's free-space question in flight, and when it was asked.
    private var probe: (work: Task<(free: Int?, used: Int), Never>, folder: String, since: ContinuousClock.Instant)?
    private var silenceReported = false
    /// Times recordings moved from the drive to the card (the storage stage's restarts).
    private(set) var restarts = 0

    /// How long the drive may take to be cleaned up and measured before a
    /// recording starts; longer, and it is taken for hung.
    static let driveDeadline: Duration = .seconds(2)
    /// How long a recording may wait on a drive that hangs before the
    /// recorder is taken for wedged (RecordingLiveness, the watchdog).
    static let driveHangGrace: Duration = .seconds(60)

    init(configuration: ServiceConfiguration, logger: Logger, fileWork: ThreadExecutor, driveWork: ThreadExecutor,
         clock: any WaitingClock) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.fileWork = fileWork
        self.driveWork = driveWork
        cardKeeper = StorageKeeper(folder: configuration.recordingsFolder, quotaBytes: configuration.quotaBytes,
                                   minFreeBytes: configuration.minFreeSpaceBytes)
    }

    private var card: Target {
        Target(folder: configuration.recordingsFolder, incoming: configuration.resolvedPartialFolder, keeper: cardKeeper,
               minFree: configuration.minFreeSpaceBytes, onDrive: false)
    }
    private var drive: Target? {
        guard let drive = configuration.drive, driveUsable, case .mounted(let mount, let folder)? = presence else { return nil }
        return Target(folder: folder, incoming: Self.driveIncoming(mount),
                      keeper: StorageKeeper(folder: folder, quotaBytes: drive.quotaBytes, minFreeBytes: drive.minFreeSpaceBytes),
                      minFree: drive.minFreeSpaceBytes, onDrive: true)
    }
    /// Where the next recording goes: the drive while it is usable, else the card.
    var current: Target { drive ?? card }

    /// Files being written on the drive (its filesystem: finishing is a rename).
    static func driveIncoming(_ mount: String) -> String { (mount == "/" ? "" : mount) + "/.obscura-incoming" }

    // MARK: Choosing

    /// Where the next recording goes, after loop recording's cleanup there.
    func choose() async -> Choice {
        var target = current
        if target.onDrive {
            let keeper = target.keeper, folder = target.folder
            // (A drive known to hang is not asked again: its thread is held.)
            let free = silenceReported ? nil : await StorageCall.within(Self.driveDeadline, on: driveWork, clock: clock) { () -> Int? in
                keeper.enforce()
                return StorageKeeper.freeBytes(folder)
            }
            switch free {
            case .none:
                logger.warning("usb.drive: \(folder) did not answer within \(Self.driveDeadline): recording to the SD card (\(configuration.recordingsFolder))")
                driveUsable = false
                driveHung = true
                restarts += 1
                target = card
            case .some(let free?) where free < target.minFree:
                // A drive too full even after its oldest files went: the card.
                logger.warning("usb.min_free_space_mb: \(free >> 20) MiB free on the drive (\(target.folder)), less than \(target.minFree >> 20) MiB: recording to the SD card (\(configuration.recordingsFolder))")
                target = card
            case .some:
                return .record(target)
            }
        }
        cardKeeper.enforce()
        if let free = StorageKeeper.freeBytes(target.folder), free < target.minFree {
            return .full("cannot record: \(free >> 20) MiB free in \(target.folder), less than the minimum \(target.minFree >> 20) MiB")
        }
        return .record(target)
    }

    /// Loop recording's oldest files after a segment or a recording: the
    /// drive's on its thread with a deadline, the card's here.
    func trim(onDrive: Bool) async {
        let keeper = current.keeper
        if onDrive {
            _ = await StorageCall.within(Self.driveDeadline, on: driveWork, clock: clock) { keeper.enforce(protecting: []) }
        } else {
            keeper.enforce(protecting: [])
        }
    }

    /// The card's cleanup (a recording finished on it).
    func trimCard() { cardKeeper.enforce() }

    /// After a recording on the drive failed: whether the drive is gone (the
    /// recording goes on on the card) or still there (the failure is the
    /// recording's own).
    func driveGoneAfterFailure() -> Bool {
        guard let drive = configuration.drive else { return false }
        let found = drive.locate()
        if case .mounted = found, driveUsable { return false }
        if case .absent(let why) = found {
            logger.warning("usb.drive: \(why); recording to the SD card (\(configuration.recordingsFolder))")
        }
        presence = found
        driveUsable = false
        restarts += 1
        return true
    }

    /// Whether a recording on the drive waits on a drive known to hang, for
    /// less than `driveHangGrace` (not a wedged recorder: it goes on when
    /// the drive answers).
    var driveHangsWithinGrace: Bool {
        silenceReported && probe.map { clock.now - $0.since < Self.driveHangGrace } == true
    }
}

// MARK: Following the drive

extension StorageTargets {
    /// Where the configured drive is (every housekeeping round): said when
    /// that changes; its folders made and its interrupted files recovered
    /// when it appears.
    func followDrive(recordingOnIt: Bool) async -> DriveNews? {
        guard let drive = configuration.drive else { return nil }
        let found = drive.locate()
        guard found != presence else { return nil }
        presence = found
        switch found {
        case .mounted(let mount, let folder):
            return await prepare(drive, mount: mount, folder: folder)
        case .absent(let why):
            let wasUsable = driveUsable
            driveUsable = false
            logger.warning("usb.drive: \(why); recording to the SD card (\(configuration.recordingsFolder))")
            return wasUsable && recordingOnIt ? .goneUnderRecording : nil
        }
    }

    /// A drive that appeared: its folders made on its own thread, with a deadline.
    private func prepare(_ drive: DriveConfiguration, mount: String, folder: String) async -> DriveNews? {
        let incoming = Self.driveIncoming(mount)
        let prepared = await StorageCall.within(Self.driveDeadline, on: driveWork, clock: clock) { () -> String? in
            do {
                for f in [folder, incoming] { try FileManager.default.createDirectory(atPath: f, withIntermediateDirectories: true) }
            } catch {
                return error.localizedDescription
            }
            do {
                for f in [folder, incoming] { try Syscalls.checkAccess(f, W_OK) }
            } catch {
                return "\(error)"
            }
            return nil
        }
        switch prepared {
        case .none:
            // Asked again next round (the question in flight answers first).
            presence = nil
            driveUsable = false
            if !driveHung {
                driveHung = true
                logger.warning("usb.drive: \(drive.identity) at \(mount) did not answer within \(Self.driveDeadline): recording to the SD card (\(configuration.recordingsFolder)) until it answers")
            }
            return nil
        case .some(nil):
            driveHung = false
            driveUsable = true
            logger.notice("usb drive \(drive.identity) at \(mount): recordings go to \(folder)")
            let recovery = InterruptedRecordings(logger: logger)
            Task.detached(executorPreference: driveWork) { recovery.recover(incoming: incoming, recordings: folder) }
            return nil
        case .some(let problem?):
            driveUsable = false
            let message = "usb.drive: \(drive.identity) at \(mount): cannot write \(folder) (\(problem)): "
                + "it must be the obscura user's, and the mount under /media (the unit's ReadWritePaths); recording to the SD card (\(configuration.recordingsFolder))"
            logger.error("\(message)")
            return .unwritable(message)
        }
    }
}

// MARK: Measuring, recovering, renaming

extension StorageTargets {
    /// Each storage's free and used space. The drive is asked on its own
    /// thread with a deadline: one that hangs is reported as not answering,
    /// and asked again only once the question in flight returns.
    func measure() async -> [StorageStatus] {
        let folder = configuration.recordingsFolder
        var list = [StorageStatus(name: "recordings", path: folder, freeBytes: StorageKeeper.freeBytes(folder),
                                  usedBytes: cardKeeper.usedBytes(), quotaBytes: configuration.quotaBytes, active: !current.onDrive)]
        if let drive = configuration.drive {
            if case .mounted(_, let onDrive)? = presence {
                list.append(await measureDrive(drive, folder: onDrive))
            } else {
                probe = nil
                list.append(StorageStatus(name: "usb", path: drive.identity.description, freeBytes: nil, usedBytes: 0,
                                          quotaBytes: drive.quotaBytes, present: false))
            }
        }
        return list
    }

    private func measureDrive(_ drive: DriveConfiguration, folder onDrive: String) async -> StorageStatus {
        if probe?.folder != onDrive {
            let keeper = StorageKeeper(folder: onDrive, quotaBytes: drive.quotaBytes, minFreeBytes: drive.minFreeSpaceBytes)
            probe = (Task.detached(executorPreference: driveWork) { (StorageKeeper.freeBytes(onDrive), keeper.usedBytes()) },
                     onDrive, clock.now)
        }
        guard let asked = probe else { preconditionFailure("a drive probe was just made") }
        var entry = StorageStatus(name: "usb", path: onDrive, freeBytes: nil, usedBytes: 0, quotaBytes: drive.quotaBytes, active: current.onDrive)
        guard let answer = await StorageCall.value(of: asked.work, within: Self.driveDeadline, clock: clock) else {
            let silent = clock.now - asked.since
            entry.silentSeconds = silent.seconds
            if !silenceReported {
                silenceReported = true
                logger.warning("usb.drive: \(onDrive) has not answered for \(String(format: "%.1f", silent.seconds)) s (its free space): the drive hangs; new recordings go to the SD card (\(configuration.recordingsFolder)) until it answers")
            }
            return entry
        }
        if probe?.since == asked.since { probe = nil }
        if silenceReported || driveHung {
            let silence = silenceReported ? String(format: " after %.1f s", (clock.now - asked.since).seconds) : ""
            let again = driveHung ? ": recordings go to it again" : ""
            silenceReported = false
            if driveHung {
                driveHung = false
                driveUsable = true
            }
            logger.notice("usb.drive: \(onDrive) answers again\(silence)\(again)")
        }
        entry.freeBytes = answer.free
        entry.usedBytes = answer.used
        return entry
    }

    /// Files a cut left in the partial folder finished, and a checksum for
    /// any finished file without one (a cut between the rename and the checksum).
    func recoverInterrupted() {
        let recovery = InterruptedRecordings(logger: logger)
        recovery.recover(incoming: configuration.resolvedPartialFolder, recordings: configuration.recordingsFolder)
        recovery.addMissingChecksums([configuration.recordingsFolder, configuration.photosFolder])
    }

    /// This boot's boot-named files renamed to wall-clock names: the card's
    /// here, the drive's on its own thread (and not while it hangs).
    func renameBootNamed() async -> (renamed: [(String, String)], problems: [String]) {
        var result = FileNames.renameBootNamed(in: [configuration.recordingsFolder, configuration.photosFolder])
        if driveUsable, probe == nil, case .mounted(_, let onDrive)? = presence,
           let onTheDrive = await StorageCall.within(Self.driveDeadline, on: driveWork, clock: clock, { FileNames.renameBootNamed(in: [onDrive]) }) {
            result.renamed += onTheDrive.renamed
            result.problems += onTheDrive.problems
        }
        return result
    }
}
