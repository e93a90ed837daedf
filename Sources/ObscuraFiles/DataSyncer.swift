#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Pushes a file's written data to the storage (fdatasync) in the background,
/// as soon as it is written, so the writer never waits on a slow SD card and
/// a power cut loses little more than the fragment being built. A request
/// that comes while a sync runs is never dropped: one more sync follows at
/// once and covers every request made meanwhile.
///
/// `@unchecked Sendable`: `lock` guards `pending`, `again`, `closed`,
/// `syncCount`, `requests`, `covered`, `framesRequest`, `framesSynced` and
/// `firstFailure`; `file` (which
/// closes itself once) and `path` are `let`s; syncs run on `queue`.
public final class DataSyncer: @unchecked Sendable {
    private let file: OwnedFileDescriptor
    private var fd: Int32 { file.rawValue }
    private let path: String
    /// The first fdatasync that failed: the storage did not take what was
    /// written (the writer ends the recording on it).
    private var firstFailure: SystemError?
    public var failure: SystemError? {
        lock.lock()
        defer { lock.unlock() }
        return firstFailure
    }
    private let queue = DispatchQueue(label: "obscura.datasync", qos: .utility)
    private let lock = Lock()
    private var pending = false
    private var again = false
    private var closed = false
    /// How many fdatasync calls were made (for tests and status).
    private var syncCount = 0
    public var syncs: Int {
        lock.lock()
        defer { lock.unlock() }
        return syncCount
    }
    /// Requests made, and how many of them the syncs begun so far cover.
    private var requests = 0
    private var covered = 0
    /// The request that first asked for frames to be synced (the file's
    /// first whole fragment), and when a sync covering it had succeeded
    /// (CLOCK_MONOTONIC, ns): the moment the recording's first frame was
    /// on the storage.
    private var framesRequest: Int?
    private var framesSynced: UInt64?
    public var firstFramesDurableAt: UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return framesSynced
    }
    /// Whether every request was followed by a sync that began after it.
    public var everyRequestCovered: Bool {
        lock.lock()
        defer { lock.unlock() }
        return covered == requests
    }

    /// Opens `path` to sync it; a file that cannot be opened is an error
    /// (a recording without its syncs would not keep its power-cut bound).
    public init(path: String) throws(SystemError) {
        file = try Syscalls.open(path, O_RDONLY)
        self.path = path
    }

    /// Asks for what has been written so far to reach the storage;
    /// `holdingFrames`: it holds frames (noted the first time, for
    /// `firstFramesDurableAt`).
    public func request(holdingFrames: Bool = false) {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        requests += 1
        if holdingFrames, framesRequest == nil { framesRequest = requests }
        guard !pending else {
            again = true
            return
        }
        pending = true
        queue.async { [self] in
            while true {
                lock.lock()
                let open = !closed
                covered = requests
                let covering = covered
                lock.unlock()
                var failed: SystemError?
                if open {
                    do throws(SystemError) { try Syscalls.fdatasync(fd, path: path) } catch { failed = error }
                }
                let done = Syscalls.monotonicNanoseconds()
                lock.lock()
                if firstFailure == nil { firstFailure = failed }
                if open, failed == nil, framesSynced == nil, let asked = framesRequest, covering >= asked { framesSynced = done }
                syncCount += 1
                if again && !closed {
                    again = false
                    lock.unlock()
                    continue
                }
                pending = false
                lock.unlock()
                return
            }
        }
    }

    /// Waits for a sync in flight and closes the descriptor.
    public func close() {
        queue.sync {}
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        file.close()
    }
}
